"""Settings read from the environment refuse values they cannot use, naming the variable."""
from tests.test_security_settings import manage


def test_a_worker_niceness_outside_0_to_19_is_refused():
    for value in ("-5", "20"):
        result = manage("check", WORKER_NICENESS=value)
        assert result.returncode != 0, value
        assert f"WORKER_NICENESS must be between 0 and 19, not {value}" in result.stderr, result.stderr[-800:]
    assert manage("check", WORKER_NICENESS="19").returncode == 0


def test_inline_detection_dispatch_is_refused_as_a_setting():
    """Running a turn's check in the request is a fixture tests and the demo replay set in code, never a deployment's."""
    result = manage("check", DETECTION_DISPATCH="inline")
    assert result.returncode != 0
    assert "DETECTION_DISPATCH='inline': use celery or off" in result.stderr, result.stderr[-800:]
    assert manage("check", DETECTION_DISPATCH="off").returncode == 0

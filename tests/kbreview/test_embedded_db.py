"""The embedded server's start-up names a folder its server user cannot enter (issue 28, finding 7)."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from kbreview.db import embedded


@pytest.fixture
def open_dir():
    # Not pytest's tmp_path: that sits under /tmp/pytest-of-root, itself mode 0700.
    root = Path(tempfile.mkdtemp(prefix="kbreview-embedded-"))
    root.chmod(0o755)
    yield root
    for folder in root.rglob("*"):
        if folder.is_dir():
            folder.chmod(0o755)
    shutil.rmtree(root)


def test_a_closed_folder_on_the_way_is_found(open_dir):
    inner = open_dir / "home" / "venv" / "pgserver"
    inner.mkdir(parents=True)
    assert embedded.closed_folder_on_the_way(inner) is None
    (open_dir / "home").chmod(0o700)
    assert embedded.closed_folder_on_the_way(inner) == open_dir / "home"


@pytest.mark.skipif(os.geteuid() != 0, reason="the server drops to another user only when started as root")
def test_start_up_refuses_naming_the_folder(open_dir):
    closed = open_dir / "private"
    (closed / "checkout").mkdir(parents=True)
    closed.chmod(0o700)
    with pytest.raises(ImproperlyConfigured, match=rf"cannot enter {closed} \(mode 700\).*chmod o\+x {closed}"):
        embedded._check_server_user_can_enter(closed / "checkout")
    closed.chmod(0o711)
    embedded._check_server_user_can_enter(closed / "checkout")  # enterable is enough


@pytest.mark.worker  # starts a PostgreSQL server of its own
def test_the_embedded_server_can_be_stopped_and_the_scripts_stop_what_they_started(open_dir):
    """Issue 29 (4): Ctrl-C left the embedded PostgreSQL running after the console and after the tests."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    pgdata = open_dir / "pgdata"
    socket_dir = embedded.embedded_socket_dir(pgdata)
    assert socket_dir and embedded.embedded_server_pid(pgdata)

    def manage(*args):
        result = subprocess.run([sys.executable, "manage.py", "embedded_db", *args, "--pgdata", str(pgdata)],
                                cwd=root, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    assert manage("status").startswith("running (pid")
    assert "stopped the embedded PostgreSQL" in manage("stop")
    assert embedded.embedded_server_pid(pgdata) is None and not (pgdata / "postmaster.pid").exists()
    assert manage("status").startswith("stopped") and "was not running" in manage("stop")
    for script in ("run_console.sh", "test.sh"):
        text = (root / "scripts" / script).read_text()
        assert ". scripts/stop_embedded_db_on_exit.sh" in text and "exec " not in text.split("stop_embedded_db_on_exit")[1], script
    guard = (root / "scripts" / "stop_embedded_db_on_exit.sh").read_text()
    assert "trap" in guard and "embedded_db stop" in guard

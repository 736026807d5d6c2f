"""Background work waits for a gap in the web's searches on this machine, boundedly, and never the reverse."""
import contextlib
import threading
import time

import pytest

from kbreview import foreground


@pytest.fixture(autouse=True)
def lock_file(settings, tmp_path, monkeypatch):
    settings.FOREGROUND_LOCK_FILE = str(tmp_path / "var" / "foreground.lock")
    monkeypatch.setattr(foreground, "_background", False)
    monkeypatch.setattr(foreground, "_skip_until", 0.0)
    monkeypatch.setattr(foreground, "_warned", False)
    return settings.FOREGROUND_LOCK_FILE


@contextlib.contextmanager
def search_running():
    """A web thread serving a search for as long as the block runs."""
    release = threading.Event()
    thread = hold_in_thread(release)
    try:
        yield
    finally:
        release.set()
        thread.join()


def hold_in_thread(release: threading.Event) -> threading.Thread:
    """A web thread serving a search until `release` is set."""
    held = threading.Event()

    def serve() -> None:
        with foreground.foreground_work():
            held.set()
            release.wait(30)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert held.wait(10)
    return thread


def test_no_wait_without_foreground_work():
    assert foreground.wait_for_gap(5.0) < 1.0


def test_a_worker_waits_at_most_its_bound_while_a_search_runs():
    with search_running():
        assert foreground.wait_for_gap(0.3) >= 0.3


def test_after_a_wait_without_a_gap_the_next_tasks_do_not_wait_for_a_while(monkeypatch):
    """Sustained foreground load: waiting before every task would cap the queue at one task per bound."""
    with search_running():
        assert foreground.wait_for_gap(0.5) >= 0.5
        assert foreground.wait_for_gap(0.5) == 0.0  # inside SATURATED_SKIP_FACTOR x 0.5 s
        monkeypatch.setattr(foreground, "_skip_until", 0.0)  # the skip over: waiting again
        assert foreground.wait_for_gap(0.5) >= 0.5


def test_a_worker_goes_on_as_soon_as_the_search_ends():
    release = threading.Event()
    thread = hold_in_thread(release)
    timer_started = time.monotonic()
    threading.Timer(0.3, release.set).start()
    waited = foreground.wait_for_gap(20.0)
    assert time.monotonic() - timer_started >= 0.3  # not before the search ended
    assert waited < 15.0  # and not the whole bound
    thread.join()


def test_a_search_never_waits_for_anything_holding_the_lock(lock_file):
    import fcntl
    import os

    with foreground.foreground_work():
        pass  # creates the file
    # Workers never lock; should anything hold a write lock for 3 s, searches still go ahead at once.
    other_fd = os.open(lock_file, os.O_RDWR)
    fcntl.fcntl(other_fd, fcntl.F_OFD_SETLK, foreground._whole_file(fcntl.F_WRLCK))
    threading.Timer(3.0, os.close, args=(other_fd,)).start()
    started = time.monotonic()
    with foreground.foreground_work():  # goes ahead without its share
        entered = time.monotonic() - started
    assert entered < 1.0


def test_searches_share_the_lock_and_never_wait_for_each_other():
    release = threading.Event()
    first = hold_in_thread(release)
    waiter = threading.Thread(target=foreground.wait_for_gap, args=(2.0,))
    waiter.start()
    started = time.monotonic()
    with foreground.foreground_work():  # a second search while the first runs and a worker polls
        entered = time.monotonic() - started
    release.set()
    first.join()
    waiter.join()
    assert entered < 1.0


def test_only_background_processes_yield(settings, monkeypatch):
    settings.WORKER_YIELD_MAX_S = 0.2
    with search_running():
        assert foreground.yield_to_foreground() == 0.0  # the web, a CLI, an eager task: never wait
        monkeypatch.setattr(foreground, "_background", True)
        assert foreground.yield_to_foreground() >= 0.2


def test_zero_turns_the_wait_off():
    with search_running():
        assert foreground.wait_for_gap(0) == 0.0


def test_a_background_process_own_searches_are_not_foreground(monkeypatch):
    monkeypatch.setattr(foreground, "_background", True)
    with foreground.foreground_work():
        monkeypatch.setattr(foreground, "_background", False)
        assert foreground.wait_for_gap(5.0) < 1.0


def test_a_filesystem_without_record_locks_never_stops_a_search_or_a_worker(monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, command, arg=0):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "fcntl", no_locks)
    with foreground.foreground_work():
        assert foreground.wait_for_gap(5.0) < 1.0


def test_an_existing_read_only_lock_file_is_used(lock_file):
    import os

    os.makedirs(os.path.dirname(lock_file))
    open(lock_file, "w").close()
    os.chmod(lock_file, 0o444)
    with search_running():
        assert foreground.wait_for_gap(0.2) >= 0.2


def test_a_lock_file_that_cannot_be_opened_never_stops_a_search_or_a_worker(settings, tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    settings.FOREGROUND_LOCK_FILE = str(blocker / "foreground.lock")
    with foreground.foreground_work():
        assert foreground.wait_for_gap(5.0) == 0.0
    with foreground.foreground_work():
        pass
    assert len([r for r in caplog.records if "foreground lock" in r.getMessage()]) == 1  # said once, not per search


def test_search_is_foreground_work(kb, monkeypatch):
    from articles import selectors

    seen = []
    monkeypatch.setattr(selectors, "_search", lambda **kwargs: seen.append(foreground.wait_for_gap(0.2)) or [])
    assert selectors.search(knowledge_base=kb, question="opening hours") == []
    assert seen and seen[0] >= 0.2

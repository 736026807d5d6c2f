"""The database backend's health check (CONN_HEALTH_CHECKS): no round trip for a sound idle connection,
and a connection the server ended is replaced before a request uses it."""
import time

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


@pytest.fixture
def own_connection():
    """A second connection to the test database, checked as a request's first query checks it."""
    wrapper = connection.copy()
    wrapper.settings_dict["CONN_HEALTH_CHECKS"] = True
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def begin_request(wrapper) -> None:
    wrapper.health_check_enabled = True
    wrapper.health_check_done = False  # what close_old_connections leaves at a request's start


def test_a_sound_idle_connection_passes_the_health_check_without_a_round_trip(own_connection, monkeypatch):
    begin_request(own_connection)
    checked = []
    monkeypatch.setattr(own_connection, "is_usable", lambda: checked.append(1) or True)
    raw = own_connection.connection
    with own_connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert checked == [] and own_connection.connection is raw


def test_a_connection_the_server_ended_is_replaced_before_the_query(own_connection):
    begin_request(own_connection)
    pid = own_connection.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while not own_connection._server_has_spoken() and time.monotonic() < deadline:
        time.sleep(0.01)
    with own_connection.cursor() as cursor:  # no error: the dead connection was closed and a new one opened
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid

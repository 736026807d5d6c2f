"""The database backend refuses a PostgreSQL without pgvector, with a message saying what to do."""
import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from kbreview.db.backend.base import DatabaseWrapper

PLAIN = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "postgres"}


def plain_postgres_without_vector() -> bool:
    """The machine's own PostgreSQL (no pgvector on these machines); checked, not assumed."""
    try:
        with psycopg.connect(**PLAIN, connect_timeout=2) as conn:
            row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
            return row is None
    except psycopg.Error:
        return False


@pytest.mark.skipif(not plain_postgres_without_vector(), reason="no PostgreSQL without pgvector on 127.0.0.1:5432")
def test_server_without_vector_extension_is_refused(django_db_blocker):
    settings_dict = {
        **connection.settings_dict,
        "NAME": PLAIN["dbname"],
        "USER": PLAIN["user"],
        "PASSWORD": "",
        "HOST": PLAIN["host"],
        "PORT": str(PLAIN["port"]),
        "EMBEDDED_PGDATA": None,
    }
    wrapper = DatabaseWrapper(settings_dict, alias="no_vector")
    with django_db_blocker.unblock():
        try:
            with pytest.raises(ImproperlyConfigured, match="has no 'vector' extension"):
                wrapper.ensure_connection()
        finally:
            wrapper.close()


@pytest.mark.django_db
def test_the_configured_database_has_pgvector():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() is not None


def test_server_side_binding_is_refused_with_a_message_saying_what_to_do():
    """The open-conflict look-up sends several statements with parameters in one message, which only client-side
    binding allows (psycopg's extended protocol refuses it)."""
    wrapper = DatabaseWrapper({**connection.settings_dict, "OPTIONS": {"server_side_binding": True}}, alias="binding")
    with pytest.raises(ImproperlyConfigured, match="server_side_binding=True is not supported"):
        wrapper.get_connection_params()

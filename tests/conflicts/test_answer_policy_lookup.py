"""The open-conflict look-up's cost and its failing open (conflicts.services.policy.conflict_check over the PL/pgSQL
function of migration 0024), and the built-in answer path recording the policy's decisions with the reply: one round
trip for the look-up, its timeout never outliving it, a look-up blocked past its timeout answering "unknown" within
it, the function missing answering "unknown", the LIMIT keeping the conflicts the turn is told about, and the
decisions adding no commit and never costing the reply (the built-in path) or the turn (a chatbot's POST /turns)."""
import contextlib
import importlib
import re
import tempfile
import time

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from psycopg import pq

from articles.models import Article
from conflicts.models import AnswerPolicy, Conflict, ConflictStatus, PolicyDecision, SuggestionStatus, Turn
from conflicts.services import answer_question
from conflicts.services.answering import answer_settings_update
from conflicts.services.policy import conflict_check
from tests.conflicts.test_answer_policy import QUESTION, fares, set_policy, turn_body  # noqa: F401 (fares: a fixture)
from tests.factories import make_article

FUNCTION = importlib.import_module("conflicts.migrations.0024_conflict_check_function")


def statement_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


def function_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'conflict_check_rows'")
        return cursor.fetchone()[0] == 1


# --- the look-up ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def round_trips():
    """Counts the network round trips on the test's connection: the server's ReadyForQuery messages in libpq's trace of
    the protocol (one ends each simple-query message, or each pipeline's sync)."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    counted: list[int] = []
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield counted
        finally:
            pgconn.untrace()
        trace.seek(0)
        counted.append(sum("ReadyForQuery" in line for line in trace))


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_lookup_is_one_round_trip_in_its_own_transaction_and_its_timeout_ends_with_it(
        kb, fares, settings):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # a loaded machine's first look-up (its plan) must not time out here
    before = statement_timeout()
    with CaptureQueriesContext(connection) as queries, round_trips() as trips:
        check = conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"])
    assert check.status == "ok" and [c.id for c in check.conflicts] == [fares["conflict"].pk]
    assert trips == [1]
    # Its own transaction, in the same message: a timeout that fires as the look-up ends cancels the look-up's own
    # COMMIT, never the caller's next statement; the timeout is reset before the COMMIT, whose timer it would be.
    [statement] = [q["sql"] for q in queries.captured_queries]
    assert statement.startswith("BEGIN; SELECT set_config('statement_timeout'")
    assert "conflict_check_rows(" in statement
    assert statement.endswith("; SET LOCAL statement_timeout TO DEFAULT; COMMIT")
    assert statement_timeout() == before and not connection.in_atomic_block and connection.get_autocommit()
    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_a_failing_lookup_leaves_the_connection_as_it_was(kb, fares, settings):
    """The failure in the look-up's message (after BEGIN and the timeout): the message's COMMIT never runs, the
    look-up rolls its transaction back, and the caller's next statements run in autocommit as before."""
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    before = statement_timeout()
    with connection.execute_wrapper(_fail_lookup):
        assert conflict_check(knowledge_base=kb, refs=["web-fares"]).status == "unknown"
    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    assert statement_timeout() == before and not connection.in_atomic_block and connection.get_autocommit()
    make_article(kb, "faq-pets", "Dogs travel free.", index=False)  # autocommitted: another connection sees it
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        assert other.execute("SELECT count(*) FROM articles_article WHERE external_ref = 'faq-pets'").fetchone() == (1,)
    finally:
        other.close()
    assert conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).status == "ok"


@pytest.mark.django_db(transaction=True)
def test_a_lookup_that_cannot_reach_the_database_answers_unknown(kb, fares):
    """The server down when the look-up connects (tests/kbreview/test_middleware.py's outage: an AttributeError in the
    clean-up after the failed connect turned the look-up's failure into a 500)."""
    from unittest import mock

    import psycopg

    connection.ensure_connection()
    connection.connection.close()  # the server went away under the request's open connection ...
    # ... which its health check finds dead on first use, and reconnecting fails
    with mock.patch.object(connection, "health_check_enabled", True), \
            mock.patch.object(connection, "health_check_done", False), \
            mock.patch.object(connection, "get_new_connection", side_effect=psycopg.OperationalError("server is down")):
        assert conflict_check(knowledge_base=kb, refs=["web-fares"]).status == "unknown"
    assert conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).status == "ok"


@pytest.mark.django_db
def test_inside_a_transaction_the_lookup_is_one_round_trip_and_leaves_neither_its_timeout_nor_a_failure_behind(
        kb, fares, settings):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    before = statement_timeout()
    with round_trips() as trips:
        assert conflict_check(knowledge_base=kb, refs=["web-fares"]).status == "ok"
    assert trips == [1]
    assert statement_timeout() == before
    with connection.execute_wrapper(_fail_lookup):
        assert conflict_check(knowledge_base=kb, refs=["web-fares"]).status == "unknown"
    assert statement_timeout() == before
    assert Conflict.objects.filter(pk=fares["conflict"].pk).exists()  # the caller's transaction goes on
    assert connection.connection.info.transaction_status == pq.TransactionStatus.INTRANS


def _fail_lookup(execute, sql, params, many, context):
    """A real error in the database inside the look-up's message, after its timeout was set."""
    if "conflict_check_rows(" in sql:
        sql = sql.replace("SELECT * FROM conflict_check_rows(", "SELECT 1 / 0, * FROM conflict_check_rows(")
    return execute(sql, params, many, context)


@pytest.mark.django_db
def test_a_lookup_blocked_past_its_timeout_answers_unknown_within_it(kb, fares, settings):
    """Another transaction holds the settings table: the look-up waits, the timeout ends it, the turn goes on."""
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 50
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.execute("SET lock_timeout = '2s'")
        other.execute("BEGIN")
        other.execute("LOCK TABLE conflicts_answersettings IN ACCESS EXCLUSIVE MODE")
        started = time.perf_counter()
        check = conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"])
        waited = time.perf_counter() - started
    finally:
        other.rollback()
        other.close()
    assert check.status == "unknown" and check.conflicts == []
    assert waited < 1.0, f"the look-up waited {waited:.2f} s past its 50 ms timeout"
    assert conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).status == "ok"


@pytest.mark.django_db
def test_without_the_function_the_lookup_fails_open_and_the_migration_puts_it_back(api, kb, fares):
    assert function_exists()
    with connection.cursor() as cursor:
        cursor.execute(FUNCTION.DROP)  # the migration's reverse (rolled back with the test)
    assert not function_exists()
    assert conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).status == "unknown"
    response = api("post", "/turns", {"external_id": "t-nofn", "question": QUESTION,
                                      "retrieved": [{"ref": "web-fares", "rank": 1}]})
    assert response.status_code == 202 and response.json()["open_conflicts"]["status"] == "unknown"
    with connection.cursor() as cursor:
        cursor.execute(FUNCTION.CREATE)
    assert conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).status == "ok"


def test_the_functions_spelled_values_are_the_current_choices():
    """A migration is frozen, so the function spells its values; a renamed choice must not pass unnoticed."""
    for value in (ConflictStatus.OPEN, SuggestionStatus.SUGGESTED, AnswerPolicy.OFF, AnswerPolicy.CAVEAT,
                  AnswerPolicy.PREFER_SUGGESTED, AnswerPolicy.QUARANTINE):
        assert f"'{value.value}'" in FUNCTION.CREATE


@pytest.mark.django_db
def test_the_limit_keeps_the_conflicts_the_turn_is_told_about(kb, fares):
    """An article in more open conflicts than a look-up reads, each with an article not retrieved and more impact:
    under off the one conflict between retrieved articles is still reported."""
    old = fares["old"]
    others = Article.objects.bulk_create(
        [Article(knowledge_base=kb, external_ref=f"faq-other-{i}", title=f"Other {i}") for i in range(60)])
    now = timezone.now()
    Conflict.objects.bulk_create([
        Conflict(knowledge_base=kb, article_low=min(old, a, key=lambda x: x.pk), article_high=max(old, a, key=lambda x: x.pk),
                 type="price", explanation="one side retrieved", detector="claims", impact=10.0,
                 first_seen=now, last_seen=now, times_seen=1)
        for a in others
    ])
    check = conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"])
    assert [c.id for c in check.conflicts] == [fares["conflict"].pk]
    set_policy(kb, "caveat")  # under caveat every open conflict of a retrieved article counts, at most the limit
    assert len(conflict_check(knowledge_base=kb, refs=["web-fares", "faq-fare-old"]).conflicts) == 50


# --- the built-in answer path: the policy's decisions with the reply -----------------------------------------------


def sent(statements: list[str]) -> list[str]:
    """The statements the server saw: an atomic block that ran nothing logs BEGIN and COMMIT but sends neither."""
    out = []
    for statement in statements:
        if statement == "COMMIT" and out and out[-1] == "BEGIN":
            out.pop()
        else:
            out.append(statement)
    return out


@pytest.mark.django_db(transaction=True)
def test_the_policys_decisions_add_no_commit_and_no_savepoint(kb, fares, settings):
    settings.DETECTION_DISPATCH = "off"  # as in bench/answer_policy.py: only the reply's own statements

    def run(policy):
        set_policy(kb, policy)
        with CaptureQueriesContext(connection) as queries:
            response = answer_question(knowledge_base=kb, question=QUESTION)
        return response, sent([q["sql"] for q in queries.captured_queries])

    run("off")  # first answers read statistics and warm caches
    off, off_statements = run("off")
    held, held_statements = run("prefer_suggested")
    assert off.held_back == [] and held.held_back == ["faq-fare-old"]
    # one statement more, the decisions' INSERT, inside the reply's transaction: no commit, no savepoint added
    assert len(held_statements) == len(off_statements) + 1
    assert held_statements.count("COMMIT") == off_statements.count("COMMIT") >= 1
    assert not [s for s in held_statements if "SAVEPOINT" in s]
    insert = next(i for i, s in enumerate(held_statements) if s.startswith("INSERT INTO conflicts_policydecision"))
    begin = max(i for i in range(insert) if held_statements[i] == "BEGIN")
    assert any(s.startswith('UPDATE "conflicts_turn" SET "reply"') for s in held_statements[begin:insert])
    assert held_statements[insert + 1] == "COMMIT"
    assert PolicyDecision.objects.get(turn=held.turn).held_back == fares["old"]
    assert Turn.objects.get(pk=held.turn.pk).reply == held.reply


@pytest.mark.django_db
def test_a_failing_decisions_write_never_costs_the_reply(kb, fares):
    set_policy(kb, "prefer_suggested")

    def fail(execute, sql, params, many, context):
        if "INSERT INTO conflicts_policydecision" in sql:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 / 0")  # a real error in the database
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        response = answer_question(knowledge_base=kb, question=QUESTION)
    assert response.held_back == ["faq-fare-old"] and "faq-fare-old" not in response.citations
    turn = Turn.objects.get(pk=response.turn.pk)
    assert turn.reply == response.reply and turn.reply_sent_at is not None
    assert not PolicyDecision.objects.exists()
    assert transaction.get_connection().in_atomic_block  # the test's own transaction is still usable
    assert make_article(kb, "faq-pets", "Dogs travel free.", index=False).pk


@pytest.mark.django_db
def test_the_answer_path_reads_the_default_mode_with_the_policy_and_on_its_own_when_the_lookup_fails(kb, fares):
    answer_settings_update(knowledge_base=kb, default_mode="truth")
    with CaptureQueriesContext(connection) as queries:
        response = answer_question(knowledge_base=kb, question=QUESTION)
    assert response.mode == "truth" and response.check.default_mode == "truth"
    assert not [q for q in queries.captured_queries if '"conflicts_answersettings"."default_mode"' in q["sql"]]
    with connection.execute_wrapper(_fail_lookup):
        fallback = answer_question(knowledge_base=kb, question=QUESTION)
    assert fallback.check.status == "unknown" and fallback.mode == "truth"
    assert answer_question(knowledge_base=kb, question=QUESTION, mode="strict").mode == "strict"


# --- a chatbot's turn (POST /turns): the policy's decisions with the turn -------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("reply", [None, "It costs €22. [[web-fares]]"])
def test_an_api_turns_decisions_ride_in_its_own_statement(api, kb, fares, settings, reply):
    """Under prefer_suggested the turn's decisions cost no statement and no commit beyond the same turn under off: they
    are written by the turn's own INSERT (with a reply, in the turn's one transaction)."""
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # a loaded machine's first look-up must not time out here
    settings.DETECTION_DISPATCH = "off"  # only the turn's own statements (detection's run on a worker)

    def run(policy, external_id):
        set_policy(kb, policy)
        with CaptureQueriesContext(connection) as queries:
            response = api("post", "/turns", turn_body(external_id, "web-fares", "faq-fare-old", reply=reply))
        assert response.status_code == 202
        return sent([q["sql"] for q in queries.captured_queries if "django_session" not in q["sql"]])

    run("off", "t-warm")
    off = run("off", "t-off")
    held = run("prefer_suggested", "t-held")
    assert len(held) == len(off) and held.count("COMMIT") == off.count("COMMIT")
    [insert] = [s for s in held if "conflicts_policydecision" in s]
    assert insert.startswith("WITH new_turn AS (INSERT INTO \"conflicts_turn\"")
    decision = PolicyDecision.objects.get()
    assert decision.turn.external_id == "t-held" and decision.held_back == fares["old"]


@pytest.mark.django_db(transaction=True)  # autocommit, as in production: the turn's bare statement, no savepoint
@pytest.mark.parametrize("reply", [None, "It costs €22. [[web-fares]]"])
def test_a_failing_decisions_write_never_costs_an_api_turn(api, kb, fares, settings, reply):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    set_policy(kb, "prefer_suggested")

    def fail(execute, sql, params, many, context):  # a real error in the database, wherever the decisions are written
        return execute(re.sub(r'INSERT INTO "?conflicts_policydecision"?', "INSERT INTO conflicts_nosuchtable", sql),
                       params, many, context)

    with connection.execute_wrapper(fail):
        response = api("post", "/turns", turn_body("t-keep", "web-fares", "faq-fare-old", reply=reply))
    assert response.status_code == 202
    assert response.json()["open_conflicts"]["held_back"] == ["faq-fare-old"]  # the chatbot is still told
    turn = Turn.objects.get(external_id="t-keep")
    assert turn.answer_policy == "prefer_suggested" and turn.usages.count() == 2 and turn.reply == (reply or "")
    assert not PolicyDecision.objects.exists()
    # the same report again is a repeat (200), not a second turn, and still records no decisions
    again = api("post", "/turns", turn_body("t-keep", "web-fares", "faq-fare-old", reply=reply))
    assert again.status_code == 200 and Turn.objects.count() == 1 and not PolicyDecision.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_unavailable_database_is_not_retried_without_the_decisions(api, kb, fares, settings):
    """The database going away while the turn is written: one attempt, the middleware's 503, no retry logged as a
    failed decisions write (which would double the time of every turn during an outage)."""
    from django.db import OperationalError

    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    set_policy(kb, "prefer_suggested")
    attempts = []

    def gone(execute, sql, params, many, context):
        if "INSERT INTO" in sql and "conflicts_turn" in sql:
            attempts.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(gone):
        response = api("post", "/turns", turn_body("t-gone", "web-fares", "faq-fare-old"))
    assert response.status_code == 503 and len(attempts) == 1
    assert not Turn.objects.filter(external_id="t-gone").exists()


def test_an_api_turns_caveat_decision_reads_the_replys_citations(api, kb, fares):
    """A turn reported with its reply under caveat: a caveat decision for the conflict the reply cites, written with
    the turn; a citation of a ref the knowledge base does not hold changes nothing."""
    set_policy(kb, "caveat")
    api("post", "/turns", turn_body("t-cav", "web-fares", "faq-fare-old", reply="€22. [[web-fares]] [[no-such-page]]"))
    assert [(d.action, d.turn.external_id) for d in PolicyDecision.objects.all()] == [("caveat", "t-cav")]
    api("post", "/turns", turn_body("t-none", "web-fares", "faq-fare-old", reply="Ask us. [[no-such-page]]"))
    assert PolicyDecision.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_chatbots_later_reply_writes_its_caveat_decision_in_the_replys_own_transaction(api, kb, fares, settings):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    settings.DETECTION_DISPATCH = "off"
    set_policy(kb, "caveat")
    api("post", "/turns", turn_body("t-later", "web-fares", "faq-fare-old"))
    with CaptureQueriesContext(connection) as queries:
        response = api("post", "/turns/t-later/reply", {"reply": "It costs €22. [[web-fares]]"})
    assert response.status_code == 200
    statements = sent([q["sql"] for q in queries.captured_queries if "django_session" not in q["sql"]])
    insert = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO conflicts_policydecision"))
    begin = max(i for i in range(insert) if statements[i] == "BEGIN")
    assert any(s.startswith('UPDATE "conflicts_turn" SET "reply"') for s in statements[begin:insert])
    assert statements[insert + 1] == "COMMIT" and statements.count("COMMIT") == 1
    assert not [s for s in statements if "SAVEPOINT" in s]
    assert [(d.action, d.turn.external_id) for d in PolicyDecision.objects.all()] == [("caveat", "t-later")]


def test_a_failing_decisions_write_never_costs_a_chatbots_later_reply(api, kb, fares, settings):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # as above
    set_policy(kb, "caveat")
    api("post", "/turns", turn_body("t-later", "web-fares", "faq-fare-old"))

    def fail(execute, sql, params, many, context):
        return execute(re.sub(r'INSERT INTO "?conflicts_policydecision"?', "INSERT INTO conflicts_nosuchtable", sql),
                       params, many, context)

    with connection.execute_wrapper(fail):
        response = api("post", "/turns/t-later/reply", {"reply": "It costs €22. [[web-fares]]"})
    assert response.status_code == 200 and response.json()["cited"] == ["web-fares"]
    assert Turn.objects.get(external_id="t-later").reply == "It costs €22. [[web-fares]]"
    assert not PolicyDecision.objects.exists()

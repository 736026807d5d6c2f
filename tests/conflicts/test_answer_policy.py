"""Answer policies for open conflicts (conflicts.services.policy): what the chatbot is told through the API, what the
built-in answer path does under each policy, isolation between knowledge bases, quarantine lifted by review, the
look-up failing open, the caveat's checks and the audit row of a change."""
import json

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from articles.models import AuditEvent
from conflicts.models import AnswerSettings, JobStatus, PolicyDecision, ResolutionSuggestion, SuggestionJob, Turn
from conflicts.services import conflict_dismiss, conflict_reopen, conflict_resolve
from conflicts.services.answering import answer_settings_update
from conflicts.services.policy import conflict_check
from tests.conflicts.console_support import make_conflict
from tests.factories import make_article

pytestmark = pytest.mark.django_db

QUESTION = "How much is a single adult ticket to Inishmara?"


@pytest.fixture
def fares(kb):
    """Two indexed articles that disagree on a price, an open conflict between them, and a current suggestion naming
    the newer one with confidence 0.9 (as a finished suggestion job leaves it)."""
    old = make_article(kb, "faq-fare-old", "A single adult ticket to Inishmara costs €18.", title="Inishmara fares")
    new = make_article(kb, "web-fares", "A single adult ticket to Inishmara costs €22.", title="Fares to Inishmara")
    conflict = make_conflict(kb, old, new, explanation="€18 vs €22 for an adult single to Inishmara.")
    suggest(conflict, winner=new, confidence=0.9)
    return {"old": old, "new": new, "conflict": conflict}


def suggest(conflict, *, winner, confidence):
    low, high = conflict.article_low, conflict.article_high
    SuggestionJob.objects.create(conflict=conflict, version_low=low.current_version, version_high=high.current_version,
                                 status=JobStatus.DONE, finished_at=timezone.now())
    return ResolutionSuggestion.objects.update_or_create(conflict=conflict, defaults=dict(
        status="suggested", winner=winner, confidence=confidence, explanation="The newer page wins.",
        version_low=low.current_version, version_high=high.current_version))[0]


def set_policy(kb, policy, **extra):
    return answer_settings_update(knowledge_base=kb, policy=policy, **extra)


def turn_body(external_id, *refs, reply=None):
    body = {"external_id": external_id, "question": QUESTION,
            "retrieved": [{"ref": ref, "rank": i} for i, ref in enumerate(refs, 1)]}
    if reply is not None:
        body["reply"] = reply
    return body


# --- what the chatbot is told ------------------------------------------------------------------------------------


def test_the_turn_response_lists_the_open_conflict_among_the_retrieved_refs_under_off(api, fares):
    response = api("post", "/turns", turn_body("t-off", "web-fares", "faq-fare-old"))
    assert response.status_code == 202
    told = response.json()["open_conflicts"]
    assert told["status"] == "ok" and told["policy"] == "off"
    assert told["held_back"] == [] and told["caveat"] is None and told["caveat_refs"] == []
    [conflict] = told["conflicts"]
    assert conflict["id"] == fares["conflict"].pk and conflict["refs"] == ["faq-fare-old", "web-fares"]
    assert conflict["type"] == "price" and conflict["explanation"] == "€18 vs €22 for an adult single to Inishmara."
    assert conflict["suggested"] == "web-fares" and conflict["confidence"] == pytest.approx(0.9)
    assert conflict["held_back"] is None
    assert Turn.objects.get(pk=response.json()["turn_id"]).answer_policy == "off"
    assert not PolicyDecision.objects.exists()


def test_retrieval_check_answers_before_the_turn_and_records_nothing(api, kb, fares):
    set_policy(kb, "prefer_suggested")
    response = api("post", "/retrieval-check", {"retrieved": ["web-fares", {"ref": "faq-fare-old", "rank": 2}]})
    assert response.status_code == 200
    body = response.json()
    assert body["policy"] == "prefer_suggested" and body["held_back"] == ["faq-fare-old"]
    assert body["conflicts"][0]["held_back"] == "faq-fare-old" and body["threshold"] == pytest.approx(0.6)
    assert not Turn.objects.exists() and not PolicyDecision.objects.exists()
    # A ref given twice (two chunks of one article) counts once: the same answer as with it once.
    twice = api("post", "/retrieval-check", {"retrieved": ["faq-fare-old", "web-fares", "web-fares"]})
    once = api("post", "/retrieval-check", {"retrieved": ["faq-fare-old", "web-fares"]})
    assert twice.status_code == 200 and twice.json() == once.json()


def test_prefer_suggested_through_the_api_holds_back_and_records_it_on_the_turn(api, kb, fares):
    set_policy(kb, "prefer_suggested")
    told = api("post", "/turns", turn_body("t-prefer", "web-fares", "faq-fare-old")).json()["open_conflicts"]
    assert told["held_back"] == ["faq-fare-old"]
    # only one side retrieved: nothing among them to prefer
    alone = api("post", "/turns", turn_body("t-alone", "faq-fare-old")).json()["open_conflicts"]
    assert alone["held_back"] == [] and alone["conflicts"] == []
    read = api("get", "/turns/t-prefer").json()
    assert read["answer_policy"] == "prefer_suggested" and read["conflict_check"] == "ok"
    assert read["policy_decisions"] == [{"conflict_id": fares["conflict"].pk, "policy": "prefer_suggested",
                                         "action": "held_back", "held_back": "faq-fare-old"}]
    assert api("get", "/turns/t-alone").json()["policy_decisions"] == []


def test_below_the_threshold_or_on_stale_texts_nothing_is_held_back(api, kb, fares):
    set_policy(kb, "prefer_suggested", prefer_threshold=0.95)
    told = api("post", "/retrieval-check", {"retrieved": ["web-fares", "faq-fare-old"]}).json()
    assert told["held_back"] == [] and told["conflicts"][0]["suggested"] is None
    set_policy(kb, "prefer_suggested", prefer_threshold=0.5)
    assert api("post", "/retrieval-check", {"retrieved": ["web-fares", "faq-fare-old"]}).json()["held_back"] == ["faq-fare-old"]
    # the suggestion was computed on other texts than the current ones: it no longer acts
    make_article(kb, "web-fares", "A single adult ticket to Inishmara costs €23.", title="Fares to Inishmara")
    assert api("post", "/retrieval-check", {"retrieved": ["web-fares", "faq-fare-old"]}).json()["held_back"] == []


def test_quarantine_holds_the_losing_side_back_even_alone(api, kb, fares):
    set_policy(kb, "quarantine")
    alone = api("post", "/turns", turn_body("t-q", "faq-fare-old")).json()["open_conflicts"]
    assert alone["policy"] == "quarantine" and alone["held_back"] == ["faq-fare-old"]
    assert api("post", "/retrieval-check", {"retrieved": ["web-fares"]}).json()["held_back"] == []
    assert PolicyDecision.objects.get().held_back == fares["old"]


def test_caveat_through_the_api_is_recorded_when_the_reply_cites_a_conflicted_article(api, kb, fares):
    set_policy(kb, "caveat", caveat_text="Two of our pages disagree here; please check with us.")
    told = api("post", "/turns", turn_body("t-cav", "web-fares", "faq-fare-old")).json()["open_conflicts"]
    assert told["caveat"] == "Two of our pages disagree here; please check with us."
    assert told["caveat_refs"] == ["faq-fare-old", "web-fares"] and told["held_back"] == []
    assert not PolicyDecision.objects.exists()  # no reply yet
    api("post", "/turns/t-cav/reply", {"reply": "It costs €22. [[web-fares]]"})
    assert api("get", "/turns/t-cav").json()["policy_decisions"] == [
        {"conflict_id": fares["conflict"].pk, "policy": "caveat", "action": "caveat", "held_back": None}]
    # a reply citing neither records nothing
    make_article(kb, "faq-pets", "Dogs travel free on the outer deck.", index=False)
    api("post", "/turns", turn_body("t-pets", "faq-pets", "web-fares", reply="Dogs travel free. [[faq-pets]]"))
    assert api("get", "/turns/t-pets").json()["policy_decisions"] == []


# --- the built-in answer path ------------------------------------------------------------------------------------


def answer(api, question=QUESTION):
    response = api("post", "/answer", {"question": question})
    assert response.status_code == 200, response.content
    return response.json()


def test_built_in_path_off_answers_as_before(api, fares):
    body = answer(api)
    assert {"faq-fare-old", "web-fares"} <= {a["ref"] for a in body["articles"]}
    assert body["held_back"] == [] and not body["caveat_added"]
    assert body["open_conflicts"]["policy"] == "off" and len(body["open_conflicts"]["conflicts"]) == 1
    assert not PolicyDecision.objects.exists()


def test_built_in_path_prefer_suggested_never_cites_the_losing_side(api, kb, fares):
    set_policy(kb, "prefer_suggested")
    body = answer(api)
    assert body["held_back"] == ["faq-fare-old"]
    assert "faq-fare-old" not in body["citations"] and "[[faq-fare-old]]" not in body["reply"]
    assert "€18" not in body["reply"] and "web-fares" in body["citations"]
    turn = Turn.objects.get(pk=body["turn_id"])
    # the turn still records what was retrieved (detection checks it), and what the policy did
    assert set(turn.usages.values_list("article__external_ref", flat=True)) >= {"faq-fare-old", "web-fares"}
    decision = PolicyDecision.objects.get(turn=turn)
    assert decision.action == "held_back" and decision.held_back == fares["old"] and decision.conflict == fares["conflict"]


def test_built_in_path_quarantine_leaves_the_loser_out_of_any_answer(api, kb, fares):
    set_policy(kb, "quarantine")
    body = answer(api, "Inishmara fares")
    assert "faq-fare-old" in body["held_back"] and "faq-fare-old" not in body["citations"]
    assert PolicyDecision.objects.filter(action="held_back", held_back=fares["old"]).count() == 1


def test_built_in_path_caveat_on_replies_citing_a_conflicted_article_and_no_other(api, kb, fares):
    set_policy(kb, "caveat", caveat_text="Our pages disagree on this; please check before you rely on it.")
    body = answer(api)
    assert body["caveat_added"] and body["reply"].endswith("Our pages disagree on this; please check before you rely on it.")
    assert Turn.objects.get(pk=body["turn_id"]).reply == body["reply"]
    assert PolicyDecision.objects.get(turn_id=body["turn_id"]).action == "caveat"
    make_article(kb, "faq-pets", "Dogs travel free on the outer deck of every ferry.", title="Pets on board")
    other = answer(api, "Can my dog travel on the outer deck?")
    assert "faq-pets" in other["citations"]
    cites_conflicted = bool({"faq-fare-old", "web-fares"} & set(other["citations"]))
    assert other["caveat_added"] is cites_conflicted
    assert other["reply"].endswith("rely on it.") is cites_conflicted


# --- isolation, review lifting the quarantine, failing open ------------------------------------------------------


def test_another_knowledge_bases_conflicts_and_policy_never_affect_this_one(api, kb, other_kb, fares):
    old = make_article(other_kb, "faq-fare-old", "A single adult ticket to Inishmara costs €18.", index=False)
    new = make_article(other_kb, "web-fares", "A single adult ticket to Inishmara costs €22.", index=False)
    theirs = make_conflict(other_kb, old, new)
    suggest(theirs, winner=old, confidence=1.0)
    set_policy(other_kb, "quarantine")
    # this knowledge base: policy off, its own conflict only, the other one's suggestion not applied
    told = api("post", "/retrieval-check", {"retrieved": ["web-fares", "faq-fare-old"]}).json()
    assert told["policy"] == "off" and [c["id"] for c in told["conflicts"]] == [fares["conflict"].pk]
    set_policy(kb, "prefer_suggested")
    assert answer(api)["held_back"] == ["faq-fare-old"]
    # and the other way round: theirs holds back their own loser only
    check = conflict_check(knowledge_base=other_kb, refs=["web-fares", "faq-fare-old"])
    assert check.held_back == ["web-fares"] and [c.id for c in check.conflicts] == [theirs.pk]


@pytest.mark.parametrize("review", ["resolve", "dismiss"])
def test_quarantine_is_lifted_on_resolve_and_dismiss_and_stays_lifted_on_reopen(api, kb, fares, review):
    set_policy(kb, "quarantine")
    assert api("post", "/retrieval-check", {"retrieved": ["faq-fare-old"]}).json()["held_back"] == ["faq-fare-old"]
    if review == "resolve":
        conflict_resolve(conflict=fares["conflict"], fixes=[], note="Checked with the fares team.")
    else:
        conflict_dismiss(conflict=fares["conflict"], reason="Both are right for their dates.")
    lifted = api("post", "/retrieval-check", {"retrieved": ["faq-fare-old"]}).json()
    assert lifted["held_back"] == [] and lifted["conflicts"] == []
    assert "faq-fare-old" in {a["ref"] for a in answer(api, "Inishmara fares")["articles"]}
    # reopened: open again, but the suggestion from before staff's decision no longer acts
    conflict_reopen(conflict=fares["conflict"], note="Not settled after all.")
    reopened = api("post", "/retrieval-check", {"retrieved": ["faq-fare-old", "web-fares"]}).json()
    assert [c["id"] for c in reopened["conflicts"]] == [fares["conflict"].pk]
    assert reopened["held_back"] == [] and reopened["conflicts"][0]["suggested"] is None
    # a suggestion computed after the reopening acts again
    suggest(fares["conflict"], winner=fares["new"], confidence=0.9)
    assert api("post", "/retrieval-check", {"retrieved": ["faq-fare-old"]}).json()["held_back"] == ["faq-fare-old"]


@pytest.fixture
def failing_lookup():
    """The open-conflict look-up fails in the database (every other statement runs as usual)."""

    def fail(execute, sql, params, many, context):
        if "/* conflict_check */" in sql:
            raise OperationalError("canceling statement due to statement timeout")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        yield


def test_a_failing_lookup_fails_open(api, kb, fares, failing_lookup):
    set_policy(kb, "prefer_suggested")
    response = api("post", "/turns", turn_body("t-fail", "web-fares", "faq-fare-old"))
    assert response.status_code == 202
    told = response.json()["open_conflicts"]
    assert told == {"status": "unknown", "policy": None, "caveat": None, "threshold": None, "held_back": [],
                    "caveat_refs": [], "conflicts": []}
    assert api("post", "/retrieval-check", {"retrieved": ["web-fares"]}).json()["status"] == "unknown"
    body = answer(api)  # the built-in path answers as under off
    assert body["open_conflicts"]["status"] == "unknown" and body["held_back"] == []
    assert {"faq-fare-old", "web-fares"} <= {a["ref"] for a in body["articles"]}
    turn = Turn.objects.get(external_id="t-fail")
    assert turn.conflict_check == "unknown" and turn.answer_policy == ""
    assert api("get", "/turns/t-fail").json()["conflict_check"] == "unknown"


# --- settings: the caveat's checks and the audit row -------------------------------------------------------------


def test_the_caveat_is_length_limited_and_cannot_carry_citation_tags(kb):
    with pytest.raises(ValueError, match="at most 240"):
        set_policy(kb, "caveat", caveat_text="x" * 241)
    with pytest.raises(ValueError, match="citation tags"):
        set_policy(kb, "caveat", caveat_text="See [[web-fares]] instead.")
    with pytest.raises(ValueError, match="caveat_text"):
        set_policy(kb, "caveat", caveat_text="two\nlines")
    with pytest.raises(ValueError, match="policy"):
        set_policy(kb, "sometimes")
    with pytest.raises(ValueError, match="prefer_threshold"):
        set_policy(kb, "prefer_suggested", prefer_threshold=1.5)
    assert not AnswerSettings.objects.filter(knowledge_base=kb).exists()


def test_a_caveat_with_markup_reaches_the_reply_as_text(api, kb, fares):
    set_policy(kb, "caveat", caveat_text="<b>Check</b> & confirm.")
    body = answer(api)
    assert body["reply"].endswith("<b>Check</b> & confirm.")  # JSON carries the text; the console escapes it


def test_a_policy_change_writes_one_audit_row_naming_what_changed(kb, django_user_model):
    ops = django_user_model.objects.create_user("otto")
    answer_settings_update(knowledge_base=kb, policy="caveat", caveat_text="Please check with us.", user=ops)
    event = AuditEvent.objects.get(action="answer.settings")
    assert event.actor == ops and event.knowledge_base == kb
    assert event.detail["before"]["policy"] == "off" and event.detail["after"] == {
        "policy": "caveat", "caveat_text": "Please check with us."}
    answer_settings_update(knowledge_base=kb, policy="caveat", user=ops)  # the same again: no second row
    assert AuditEvent.objects.filter(action="answer.settings").count() == 1


def test_the_openapi_document_describes_the_policy_fields(client):
    document = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/retrieval-check" in document["paths"]
    schemas = document["components"]["schemas"]
    check = schemas["ConflictCheckOut"]["properties"]
    assert {"status", "policy", "caveat", "held_back", "caveat_refs", "conflicts", "threshold"} <= set(check)
    assert "open_conflicts" in schemas["TurnAccepted"]["properties"]
    assert "policy_decisions" in schemas["TurnOut"]["properties"]
    assert json.dumps(schemas).count("prefer_suggested") >= 1

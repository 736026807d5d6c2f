"""Turns that arrive close together share an LLM call (conflicts.services.detection with agents.batching),
against the scripted OpenAI-compatible server: one call for a batch, verdicts and costs fanned back to each
turn's run, a failed call failing every turn in it open, the cap of 20 articles per call, the gate a turn
opens and the wake-up message that judges the turns that joined it (or, the broker refusing it, the bounded
wait in place), and one call per turn when batching is off.

The claim detector is a stand-in (it flags only what a test says), so these tests pin the batching, not
claim extraction; turns are recorded with Celery dispatch and checked by calling the task's service."""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
import types

import pytest
from django.db import connection
from django.db.models import F
from django.utils import timezone

from agents.llm_detector import listed_pairs
from agents.types import ConflictFinding
from conflicts.models import Conflict, ConflictOccurrence, DetectionOutcome, DetectionRun, PairVerdict, Turn
from conflicts.services import turn_detect
from conflicts.services.turns import RetrievedRef, turn_report
from tests.factories import make_article
from tests.support.scripted_llm import answer, http_error, invalid_json, message_text, slow, verdict, verdicts

FARES = {
    "fare-a": "A single adult ticket to Inishmara costs €18.",
    "fare-b": "A single adult ticket to Inishmara costs €22.",
    "fare-c": "Return tickets to Inishmara cost €40 for adults.",
    "fare-d": "Children under 12 travel to Inishmara for €9.",
}


@pytest.fixture
def claims_stand_in(monkeypatch):
    from conflicts.services.detection import claim_detector_warm_up

    # The real detector warmed up first, as a worker at start: the excerpts still use its sentence model and
    # parsers, and no check's 2 s bound may pay for loading them.
    claim_detector_warm_up()
    """agents.claims.detect_claim_conflicts flags `stand_in.findings` and calls `stand_in.unrelated`
    about different things (both restricted to the articles of the set)."""
    stand_in = types.SimpleNamespace(findings=[], unrelated=set())

    def detect_claim_conflicts(*, articles, now=None, vectors=None, judge=None):
        refs = {a.ref for a in articles}
        return types.SimpleNamespace(
            findings=[f for f in stand_in.findings if set(f.refs) <= refs],
            unrelated_pairs=lambda: {p for p in stand_in.unrelated if set(p) <= refs})

    monkeypatch.setattr("agents.claims.detect_claim_conflicts", detect_claim_conflicts)
    return stand_in


@pytest.fixture
def batching(settings, scripted_llm, claims_stand_in):
    settings.DETECTION_DISPATCH = "celery"  # turns stay queued until a worker (here: the test) takes one
    settings.DETECTION_DETECTOR = "llm"
    settings.DETECTION_TIMEOUT_S = 2.0
    settings.DETECTION_BATCH_WAIT_MS = 0
    settings.DETECTION_BATCH_MAX_TURNS = 16
    settings.DETECTION_BATCH_MAX_PAIRS = 60
    settings.LLM = {**settings.LLM, "base_url": scripted_llm.base_url, "model": scripted_llm.model, "timeout_s": 5.0,
                    "json_mode": "json_schema"}  # no second request to learn the JSON mode after a 500
    return scripted_llm


@pytest.fixture
def fares(kb):
    return {ref: make_article(kb, ref, body, index=False) for ref, body in FARES.items()}


def report(kb, external_id, refs, reply=None):
    turn, _ = turn_report(knowledge_base=kb, external_id=external_id, question="How much is a ticket?",
                          retrieved=[RetrievedRef(ref=r, rank=i) for i, r in enumerate(refs, 1)], reply=reply)
    return turn


def run_of(turn) -> DetectionRun:
    return DetectionRun.objects.get(turn=turn)


def asked(request) -> list[str]:
    user = message_text(request, "user")
    if "every pair of the articles above" in user:
        refs = re.findall(r'<article ref="([^"]+)"', user)
        return [f"{a} | {b}" for i, a in enumerate(refs) for b in refs[i + 1:]]
    return [f"{a} | {b}" for a, b in listed_pairs(user)]


A_B_CONFLICT = verdict("fare-a", "fare-b", type="price", explanation="€18 against €22",
                       snippets={"fare-a": "costs €18", "fare-b": "costs €22"})


@pytest.mark.django_db
def test_turns_waiting_together_are_judged_in_one_call(kb, fares, batching):
    turns = [report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-b", "fare-a", "fare-c"]),
             report(kb, "t-3", ["fare-c", "fare-b"])]
    batching.push(answer(verdicts(A_B_CONFLICT, verdict("fare-b", "fare-c", conflict=False))))

    turn_detect(turn_id=turns[0].pk)

    (request,) = batching.requests
    assert sorted(asked(request)) == ["fare-a | fare-b", "fare-a | fare-c", "fare-b | fare-c"]  # each pair once
    runs = [run_of(t) for t in turns]
    assert [r.outcome for r in runs] == [DetectionOutcome.OK] * 3
    assert [r.llm_calls for r in runs] == [1, 0, 0] and runs[0].tokens > 0 and runs[1].tokens == 0
    assert [r.batch_turns for r in runs] == [3, 3, 3]
    assert [r.conflicts_found for r in runs] == [1, 1, 0]
    conflict = Conflict.objects.get()
    assert conflict.times_seen == 2 and conflict.detector == "llm"
    assert set(ConflictOccurrence.objects.values_list("turn__external_id", flat=True)) == {"t-1", "t-2"}
    assert PairVerdict.objects.count() == 3  # each pair's verdict stored once (same versions)
    # Every verdict names the model that gave it, also those stored by the turns that rode in the call.
    assert set(PairVerdict.objects.values_list("model", flat=True)) == {batching.model}
    # The other turns' own messages find their runs finished: nothing is asked again.
    assert turn_detect(turn_id=turns[1].pk).outcome == DetectionOutcome.OK
    assert len(batching.requests) == 1


@pytest.mark.django_db
def test_batching_off_is_one_call_per_turn(kb, fares, batching, settings):
    settings.DETECTION_BATCH_MAX_TURNS = 1
    first, second = report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-c", "fare-d"])
    batching.push(answer(verdicts(A_B_CONFLICT)), answer(verdicts()))
    turn_detect(turn_id=first.pk)
    assert run_of(second).outcome == DetectionOutcome.QUEUED
    turn_detect(turn_id=second.pk)
    assert [asked(r) for r in batching.requests] == [["fare-a | fare-b"], ["fare-c | fare-d"]]
    assert [(run_of(t).llm_calls, run_of(t).batch_turns) for t in (first, second)] == [(1, 1), (1, 1)]


@pytest.mark.parametrize(
    "fault, outcome, reason",
    [
        (http_error(500), DetectionOutcome.ERROR, "http_error"),
        (invalid_json(), DetectionOutcome.ERROR, "invalid_json"),
        (slow(5.0), DetectionOutcome.TIMEOUT, "no verdict within 2 s"),
    ],
    ids=["500", "invalid-json", "timeout"],
)
@pytest.mark.django_db
def test_a_failed_batch_fails_open_for_every_turn_in_it(kb, fares, batching, fault, outcome, reason):
    turns = [report(kb, f"t-{i}", refs, reply=f"Reply {i} [[fare-a]]")
             for i, refs in enumerate([["fare-a", "fare-b"], ["fare-b", "fare-c"], ["fare-a", "fare-d"]], 1)]
    batching.push(fault)
    started = time.monotonic()
    turn_detect(turn_id=turns[0].pk)
    assert time.monotonic() - started < 4.5  # bounded by DETECTION_TIMEOUT_S, not the endpoint
    assert len(batching.requests) == 1
    for turn in turns:
        run = run_of(turn)
        assert run.outcome == outcome and run.finished_at is not None
        assert reason in run.reason and "recorded as no conflicts" in run.reason
        assert "a call shared by 3 turns" in run.reason
    assert not Conflict.objects.exists() and not PairVerdict.objects.exists()
    # Replies are what the chatbot sent, untouched by the failed check.
    assert [Turn.objects.get(pk=t.pk).reply for t in turns] == [f"Reply {i} [[fare-a]]" for i in (1, 2, 3)]


@pytest.mark.django_db
def test_a_failed_call_fails_only_the_turns_that_needed_it(kb, batching, settings):
    """Two calls (22 articles do not fit in one): the first fails, the second turn's verdicts stand."""
    settings.DETECTION_TIMEOUT_S = 10.0
    for i in range(22):
        make_article(kb, f"faq-{i:02d}", f"Article number {i} about lockers.", index=False)
    first = report(kb, "t-1", [f"faq-{i:02d}" for i in range(11)])
    second = report(kb, "t-2", [f"faq-{i:02d}" for i in range(11, 22)])
    # The two calls go out in parallel: the one showing the first turn's articles fails.
    batching.respond = lambda request: (http_error(500) if 'ref="faq-00"' in message_text(request, "user")
                                        else verdicts())
    turn_detect(turn_id=first.pk)
    prompts = sorted((message_text(r, "user") for r in batching.requests), key=lambda p: 'ref="faq-00"' not in p)
    assert [p.count("<article ") for p in prompts] == [11, 11]  # never more than 20 articles in a call
    assert run_of(first).outcome == DetectionOutcome.ERROR and "shared" not in run_of(first).reason
    run = run_of(second)
    assert run.outcome == DetectionOutcome.OK and run.llm_calls == 1 and run.batch_turns == 1
    assert PairVerdict.objects.count() == 11 * 10 // 2


@pytest.mark.django_db
def test_a_batch_never_shows_more_than_twenty_articles_per_call(kb, batching, settings):
    settings.DETECTION_TIMEOUT_S = 10.0
    for i in range(30):
        make_article(kb, f"faq-{i:02d}", f"Article number {i} about lockers.", index=False)
    sets = [range(0, 8), range(8, 16), range(16, 24), range(24, 30), range(0, 4)]
    turns = [report(kb, f"t-{n}", [f"faq-{i:02d}" for i in refs]) for n, refs in enumerate(sets)]
    batching.respond = lambda request: verdicts()
    turn_detect(turn_id=turns[0].pk)
    counts = [message_text(r, "user").count("<article ") for r in batching.requests]
    assert len(counts) == 2 and max(counts) <= 20 and sum(counts) == 30
    assert all(run_of(t).outcome == DetectionOutcome.OK for t in turns)
    assert sum(run_of(t).llm_calls for t in turns) == 2


@pytest.mark.django_db
def test_only_turns_of_the_same_knowledge_base_share_a_call(kb, other_kb, fares, batching):
    make_article(other_kb, "fare-a", FARES["fare-a"], index=False)
    make_article(other_kb, "fare-b", "A single adult ticket costs €30.", index=False)
    ours, theirs = report(kb, "t-1", ["fare-a", "fare-b"]), report(other_kb, "t-1", ["fare-a", "fare-b"])
    batching.push(answer(verdicts()))
    turn_detect(turn_id=ours.pk)
    assert len(batching.requests) == 1 and "€30" not in message_text(batching.requests[0], "user")
    assert run_of(theirs).outcome == DetectionOutcome.QUEUED


@pytest.mark.django_db
def test_runs_record_pairs_about_different_things_and_confirmations(kb, fares, batching, settings, claims_stand_in):
    settings.DETECTION_DETECTOR = "auto"
    claims_stand_in.findings = [
        ConflictFinding(refs=("fare-a", "fare-b"), type="price", explanation="Fare A says €18, fare B says €22.",
                        snippets={"fare-a": "costs €18", "fare-b": "costs €22"}, confidence=0.5),
        ConflictFinding(refs=("fare-a", "fare-c"), type="price", explanation="unsure", confidence=0.5),
    ]
    claims_stand_in.unrelated = {("fare-c", "fare-d")}
    turn = report(kb, "t-1", ["fare-a", "fare-b", "fare-c", "fare-d"])
    batching.respond = lambda request: verdicts(A_B_CONFLICT, verdict("fare-a", "fare-c", conflict=False))
    turn_detect(turn_id=turn.pk)
    run = run_of(turn)
    assert (run.unrelated_pairs, run.llm_confirmed, run.llm_rejected) == (1, 1, 1)
    assert "fare-c | fare-d" not in asked(batching.requests[0])
    conflict = Conflict.objects.get()
    assert conflict.detector == "both" and conflict.explanation == "Fare A says €18, fare B says €22."
    assert ConflictOccurrence.objects.get().detector == "both"


@pytest.mark.django_db
def test_a_turn_is_left_to_a_worker_gathering_its_knowledge_base(kb, fares, batching):
    gathering, late = report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-b", "fare-c"])
    DetectionRun.objects.filter(turn=gathering).update(gathering_until=timezone.now() + dt.timedelta(seconds=30))
    assert turn_detect(turn_id=late.pk).outcome == DetectionOutcome.QUEUED  # left, claim released
    assert run_of(late).claimed_at is None and batching.requests == []
    # The gathering worker closes its gate and takes the late turn with its own.
    DetectionRun.objects.filter(turn=gathering).update(gathering_until=None)
    batching.push(answer(verdicts(A_B_CONFLICT)))
    turn_detect(turn_id=gathering.pk)
    assert len(batching.requests) == 1
    assert [run_of(t).outcome for t in (gathering, late)] == [DetectionOutcome.OK] * 2
    assert [run_of(t).attempts for t in (gathering, late)] == [1, 1]  # the hand-over was not an attempt


@pytest.fixture
def broker(monkeypatch):
    """Messages sent to the broker, held (name, *args, countdown) instead of run: the test delivers them."""
    sent = []

    def send(name, *args, countdown=None):
        sent.append((name, *args, countdown))
        return True

    monkeypatch.setattr("kbreview.jobs.send", send)
    return sent


def time_passes(seconds: float) -> None:
    """Every queued run recorded (and its gate opened) `seconds` earlier, as if that much time had passed."""
    shift = dt.timedelta(seconds=seconds)
    DetectionRun.objects.update(created_at=F("created_at") - shift)
    DetectionRun.objects.filter(gathering_until__isnull=False).update(gathering_until=F("gathering_until") - shift)


@pytest.mark.django_db
def test_a_gate_frees_its_worker_and_its_wake_up_judges_the_turns_that_joined_it_once(kb, fares, batching, settings,
                                                                                       broker):
    settings.DETECTION_BATCH_WAIT_MS = 5000
    first, joining = report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-c", "fare-d"])
    started = time.monotonic()
    assert turn_detect(turn_id=first.pk).outcome == DetectionOutcome.QUEUED
    assert time.monotonic() - started < 2.5  # the worker did not sleep through the wait
    run = run_of(first)
    assert run.gathering_until == run.created_at + dt.timedelta(seconds=5)
    assert (run.claimed_at, run.attempts) == (None, 0)  # handed to the wake-up, not attempted
    ((name, turn_id, countdown),) = broker
    assert (name, turn_id) == ("conflicts.tasks.detect_turn", first.pk) and 3.0 < countdown <= 5.0
    # A turn taken while the gate is open joins it: no call, no second gate.
    assert turn_detect(turn_id=joining.pk).outcome == DetectionOutcome.QUEUED
    assert len(broker) == 1 and batching.requests == []

    time_passes(6)
    batching.push(answer(verdicts(A_B_CONFLICT)))
    assert turn_detect(turn_id=first.pk).outcome == DetectionOutcome.OK  # the wake-up
    (request,) = batching.requests
    assert sorted(asked(request)) == ["fare-a | fare-b", "fare-c | fare-d"]
    runs = [run_of(t) for t in (first, joining)]
    assert [(r.outcome, r.batch_turns, r.attempts) for r in runs] == [(DetectionOutcome.OK, 2, 1)] * 2
    assert runs[0].gathering_until is None and runs[0].llm_calls == 1
    # The wake-up again, or the joined turn's own message again: judged once, nothing is asked again.
    for turn in (first, joining, first):
        assert turn_detect(turn_id=turn.pk).outcome == DetectionOutcome.OK
    assert len(batching.requests) == 1 and len(broker) == 1
    assert Conflict.objects.get().times_seen == 1


@pytest.mark.django_db
def test_turns_of_a_gate_whose_wake_up_was_lost_are_sent_again_by_the_sweeper(kb, fares, batching, settings, broker):
    from kbreview.jobs import jobs_sweep

    settings.DETECTION_BATCH_WAIT_MS = 5000
    first, joining = report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-c", "fare-d"])
    turn_detect(turn_id=first.pk)
    turn_detect(turn_id=joining.pk)
    broker.clear()  # the wake-up is lost
    time_passes(settings.TASK_SWEEP_INTERVAL_S + 10)
    jobs_sweep()
    resent = [turn_id for name, turn_id, _ in broker if name == "conflicts.tasks.detect_turn"]
    assert sorted(resent) == sorted([first.pk, joining.pk])
    batching.push(answer(verdicts(A_B_CONFLICT)))
    for turn_id in resent:
        turn_detect(turn_id=turn_id)
    assert len(batching.requests) == 1  # whichever message comes first takes both turns
    assert [run_of(t).outcome for t in (first, joining)] == [DetectionOutcome.OK] * 2


@pytest.mark.django_db
def test_an_early_wake_up_waits_out_the_rest_of_the_gate(kb, fares, batching, settings, broker):
    """A message for the gate's turn that comes before the gate's end (a clock ahead, a duplicate) takes the
    turn and waits in place until that end (bounded by DETECTION_BATCH_WAIT_MS), then judges the batch."""
    settings.DETECTION_BATCH_WAIT_MS = 1500
    first = report(kb, "t-1", ["fare-a", "fare-b"])
    turn_detect(turn_id=first.pk)
    gate_end = run_of(first).gathering_until
    report(kb, "t-2", ["fare-c", "fare-d"])  # its own message is held by the broker
    batching.push(answer(verdicts(A_B_CONFLICT)))
    started = time.monotonic()
    assert turn_detect(turn_id=first.pk).outcome == DetectionOutcome.OK
    assert timezone.now() >= gate_end and time.monotonic() - started < 3.0
    (request,) = batching.requests
    assert sorted(asked(request)) == ["fare-a | fare-b", "fare-c | fare-d"]
    runs = DetectionRun.objects.filter(turn__knowledge_base=kb).order_by("created_at")
    assert [(r.outcome, r.batch_turns, r.gathering_until) for r in runs] == [(DetectionOutcome.OK, 2, None)] * 2


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_wake_up_the_broker_refused_waits_in_place(kb, fares, batching, settings, monkeypatch):
    settings.DETECTION_BATCH_WAIT_MS = 600
    # Commits happen in this test: no message may run a turn's check eagerly, the test is the worker.
    monkeypatch.setattr("kbreview.jobs.send", lambda *args, **kwargs: False)
    first = report(kb, "t-1", ["fare-a", "fare-b"])
    batching.push(answer(verdicts(A_B_CONFLICT)))

    def arrive_later():
        time.sleep(0.2)
        try:
            report(kb, "t-2", ["fare-c", "fare-d"])
        finally:
            connection.close()

    other = threading.Thread(target=arrive_later)
    other.start()
    started = time.monotonic()
    turn_detect(turn_id=first.pk)
    other.join()
    assert time.monotonic() - started < 2.0  # the wait is bounded by DETECTION_BATCH_WAIT_MS
    (request,) = batching.requests
    assert sorted(asked(request)) == ["fare-a | fare-b", "fare-c | fare-d"]
    runs = DetectionRun.objects.filter(turn__knowledge_base=kb).order_by("created_at")
    assert [(r.outcome, r.batch_turns, r.attempts) for r in runs] == [(DetectionOutcome.OK, 2, 1)] * 2
    assert runs[0].gathering_until is None


@pytest.mark.django_db
def test_a_pair_found_by_the_claims_on_one_turn_and_the_llm_on_another_was_found_by_both(
        kb, fares, batching, settings, claims_stand_in):
    settings.DETECTION_DETECTOR = "claims"
    claims_stand_in.findings = [ConflictFinding(refs=("fare-a", "fare-b"), type="price", explanation="€18 vs €22")]
    turn_detect(turn_id=report(kb, "t-1", ["fare-a", "fare-b"]).pk)
    assert Conflict.objects.get().detector == "claims"
    settings.DETECTION_DETECTOR = "llm"
    batching.push(answer(verdicts(A_B_CONFLICT)))
    turn_detect(turn_id=report(kb, "t-2", ["fare-a", "fare-b"]).pk)
    assert Conflict.objects.get().detector == "both"
    assert dict(ConflictOccurrence.objects.values_list("turn__external_id", "detector")) == {"t-1": "claims", "t-2": "llm"}


@pytest.mark.django_db
def test_a_worker_stopped_while_waiting_closes_its_gate_and_wakes_the_turns_left_to_it(
        kb, fares, batching, settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.DETECTION_BATCH_WAIT_MS = 1000
    sent = []
    # The broker refuses the wake-up (so the worker waits in place) and takes the messages after it.
    monkeypatch.setattr("kbreview.jobs.send",
                        lambda name, *args, countdown=None: sent.append((name, *args)) or countdown is None)

    def stopped(moment):
        raise SystemExit("worker shutting down")

    monkeypatch.setattr("conflicts.services.detection.batching._wait_until", stopped)
    first, left = report(kb, "t-1", ["fare-a", "fare-b"]), report(kb, "t-2", ["fare-c", "fare-d"])
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(SystemExit):
        turn_detect(turn_id=first.pk)
    run = run_of(first)
    assert run.outcome == DetectionOutcome.QUEUED and run.claimed_at is None and run.gathering_until is None
    assert sent == [("conflicts.tasks.detect_turn", first.pk), ("conflicts.tasks.detect_turn", left.pk)]
    assert batching.requests == []


@pytest.mark.django_db
def test_a_pair_judged_while_the_worker_waited_is_not_asked_again(kb, fares, batching, settings, monkeypatch):
    """Another worker's batch, in flight when this turn was planned, records the pair's verdict during the
    wait: the turn is planned again after it, and its pair answered from the verdict."""
    settings.DETECTION_BATCH_WAIT_MS = 1000
    versions = sorted(fares[ref].current_version_id for ref in ("fare-a", "fare-b"))

    def meanwhile(moment):
        PairVerdict.objects.create(version_low_id=versions[0], version_high_id=versions[1], is_conflict=False,
                                   detector="llm", model="scripted")

    monkeypatch.setattr("conflicts.services.detection.batching._wait_until", meanwhile)
    run = turn_detect(turn_id=report(kb, "t-1", ["fare-a", "fare-b"]).pk)
    assert (run.outcome, run.llm_calls, run.cache_hits) == (DetectionOutcome.OK, 0, 1)
    assert batching.requests == []

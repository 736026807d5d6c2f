"""Both designs on one replay, for bench/detection_cost.py: this design through the real path (turn_report,
then turn_detect as a worker runs it, with the workers, their wake-up messages and the clock played here:
class Workers), the seed policy as one detect_with_llm call per turn; then what each found, read back.

Django must be set up first (detection_cost.py does, on its own database); project imports wait until called.
"""
from __future__ import annotations

import datetime as dt
import itertools
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor

from _detection_fixtures import KB, Event, Oracle, Question, edit_article

from agents.types import MAX_ARTICLES_CHECKED as MAX_ARTICLES


def parsed_article(article, *, location: str):
    from articles.ingest import ParsedArticle

    return ParsedArticle(ref=article.ref, title=article.title, body=article.body, source=article.source,
                         source_uri=f"bench://{article.ref}", updated_at=article.updated_at, location=location)


def article_text(article):
    from agents.types import ArticleText

    return ArticleText(ref=article.ref, title=article.title, body=article.body, updated_at=article.updated_at,
                       source=article.source)


class Workers:
    """The Celery workers, their broker's delayed messages and the clock of this design's replay, played in
    this process.

    Turns arrive by a Poisson process (`rate` per second) on a simulated clock: django.utils.timezone.now
    returns it, so rows carry simulated times. Each turn is taken by a worker as it arrives
    (conflicts.services.detection.turn_detect, the task's service): settled without the LLM, left to an open
    gate, or -- pairs for the LLM and no gate open -- the worker opens a gate of DETECTION_BATCH_WAIT_MS and
    sends a wake-up message for its end (kbreview.jobs.send with a countdown, caught here), then returns.
    When the next arrival is past the gate's end, the clock is set to that end and the wake-up is delivered:
    its worker takes every queued turn (up to DETECTION_BATCH_MAX_TURNS) and sends their pairs in as few calls
    as the rules allow. Turns a full batch left are sent again and taken the same way (as the messages
    wake_on_commit sends do; those messages themselves are dropped: the replay plays the worker for every turn).
    No worker sleeps in this design: a wait in place (_wait_until) longer than a clock tick fails the replay.
    """

    def __init__(self, *, start) -> None:
        from django.utils import timezone

        import kbreview.jobs
        from conflicts.services.detection import batching
        from conflicts.tasks import detect_turn

        self.start = start
        self.offset_s = 0.0
        self.gate: tuple[int, float] | None = None  # (turn id of the wake-up, second it is due)
        self.waits = 0
        self.detect_turn = detect_turn.name
        timezone.now = self.now  # every caller looks the attribute up at call time
        batching._wait_until = self._wait_until
        kbreview.jobs.send = self._send

    def now(self):
        return self.start + dt.timedelta(seconds=self.offset_s)

    def seconds(self, moment) -> float:
        return (moment - self.start).total_seconds()

    def _send(self, task_name: str, *args, countdown: float | None = None) -> bool:
        if countdown is not None:  # a gate's wake-up (other messages come from the publisher thread: dropped)
            assert task_name == self.detect_turn and self.gate is None, "a second gate opened while one was open"
            self.gate = (args[0], self.offset_s + countdown)
            self.waits += 1
        return True

    def _wait_until(self, moment) -> None:
        # A wake-up delivered at its second may find the gate's end a rounding error ahead of the clock.
        step = self.seconds(moment) - self.offset_s
        assert step < 0.001, f"a worker waited {step:.3f} s in place"
        self.offset_s = max(self.offset_s, self.seconds(moment))

    def advance(self, second: float) -> None:
        """Deliver every wake-up due before `second` (with what it leaves behind), then set the clock to it."""
        while self.gate is not None and self.gate[1] <= second:
            turn_id, due = self.gate
            self.gate, self.offset_s = None, max(self.offset_s, due)
            self.take(turn_id)
            self.take_left_behind()
        self.offset_s = max(self.offset_s, second)

    def take(self, turn_id: int) -> None:
        from conflicts.services.detection import turn_detect

        turn_detect(turn_id=turn_id)

    def take_left_behind(self) -> None:
        from conflicts.models import DetectionOutcome, DetectionRun

        while self.gate is None:
            queued = (DetectionRun.objects.filter(outcome=DetectionOutcome.QUEUED, claimed_at__isnull=True)
                      .order_by("created_at", "pk").values_list("turn_id", flat=True).first())
            if queued is None:
                return
            self.take(queued)

    def finish(self) -> None:
        self.advance(float("inf"))


def replay(*, kb: KB, questions: list[Question], events: list[Event], arrival: list[float], this_oracle: Oracle,
           seed_oracle: Oracle, progress_every: int, seed: int) -> dict:
    """Every turn through both designs. Returns what the seed found; this design's results are in the database."""
    from django.conf import settings
    from django.utils import timezone

    from agents.llm_detector import detect_with_llm
    from agents.types import pair_key
    from articles.services import article_upsert, articles_import, knowledge_base_get_or_create
    from conflicts.services.detection import claim_detector_warm_up
    from conflicts.services.turns import RetrievedRef, turn_report
    from tests.support.scripted_llm import ScriptedLLM

    knowledge_base = knowledge_base_get_or_create(slug="bench-detection", name="Bench: detection cost")
    started = time.monotonic()
    articles_import(knowledge_base=knowledge_base, reindex=False,
                    parsed=[parsed_article(a, location=f"bench {a.ref}") for a in kb.articles.values()])
    import_s = time.monotonic() - started
    t0 = time.monotonic()
    claim_detector_warm_up()  # as a worker does at start: the model and the parsers are loaded once
    warm_s = time.monotonic() - t0
    rng = random.Random(seed + 7)

    this_server, seed_server = ScriptedLLM(respond=this_oracle), ScriptedLLM(respond=seed_oracle)
    with this_server, seed_server:
        settings.DETECTION_DISPATCH = "celery"  # as in production; the replay plays the workers (Workers)
        settings.DETECTION_DETECTOR = "auto"
        settings.DETECTION_TIMEOUT_S = 60.0  # no timeouts on a busy 2-core machine: we count calls, not latency
        # The scripted endpoint serves detection only; suggestion jobs for new conflicts are recorded and
        # never run (no worker), so they cannot blur the detection counts.
        settings.LLM = {"base_url": None}
        settings.LLM_PURPOSES = {"answer": {}, "suggestions": {}, "detection": {
            "base_url": this_server.base_url, "api_key": "bench", "model": "scripted-model", "timeout_s": 30.0,
            "json_mode": "json_schema"}}
        seed_config = seed_server.config(timeout_s=30.0)
        timings = {"this_s": 0.0, "edits_s": 0.0, "import_s": import_s, "warm_s": warm_s}
        today = timezone.localdate()
        workers = Workers(start=timezone.now())
        # The seed's calls run on a thread of their own, on texts taken when the turn is reported, so the
        # two designs see identical articles while the replay takes the time of the slower one only.
        seed_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-seed")
        seed_futures = []
        for index, event in enumerate(events):
            question = questions[event.question]
            t0 = time.monotonic()
            workers.advance(arrival[index])
            timings["this_s"] += time.monotonic() - t0
            if event.edit_ref is not None:
                t0 = time.monotonic()
                article = kb.articles[event.edit_ref]
                edit_article(article, rng)
                _, outcome = article_upsert(knowledge_base=knowledge_base,
                                            parsed=parsed_article(article, location=f"edit {index}"))
                assert outcome == "updated", outcome
                timings["edits_s"] += time.monotonic() - t0
            refs = list(question.refs[:MAX_ARTICLES])
            seed_futures.append(seed_pool.submit(
                detect_with_llm, articles=[article_text(kb.articles[r]) for r in refs],
                pairs=[pair_key(a, b) for a, b in itertools.combinations(refs, 2)], config=seed_config, now=today))
            t0 = time.monotonic()
            turn, _ = turn_report(knowledge_base=knowledge_base, external_id=f"turn-{index}", question=question.text,
                                  retrieved=[RetrievedRef(ref=ref, rank=rank) for rank, ref in enumerate(question.refs, 1)])
            workers.take(turn.pk)
            timings["this_s"] += time.monotonic() - t0
            if (index + 1) % progress_every == 0:
                print(f"  {index + 1} turns replayed ({time.monotonic() - started:.0f} s, load {load():.1f})", flush=True)
        t0 = time.monotonic()
        workers.finish()
        timings["this_s"] += time.monotonic() - t0
        t0 = time.monotonic()
        seed_turn_pairs = [{finding.refs for finding in future.result().findings} for future in seed_futures]
        timings["seed_wait_s"] = time.monotonic() - t0
        seed_pool.shutdown()
        this_requests, seed_requests = len(this_server.requests), len(seed_server.requests)
    return {"seed_turn_pairs": seed_turn_pairs, "timings": timings, "this_requests": this_requests,
            "seed_requests": seed_requests, "windows": workers.waits, "span_s": arrival[-1] if arrival else 0.0}


def load() -> float:
    return os.getloadavg()[0]


def this_design_results(*, events: list[Event]) -> dict:
    """Calls, tokens and flagged pairs of this design, read back from the database."""
    from django.db.models import Count, Sum

    from conflicts.models import Conflict, ConflictOccurrence, DetectionRun, PairVerdict

    runs = DetectionRun.objects.filter(turn__knowledge_base__slug="bench-detection")
    sums = runs.aggregate(calls=Sum("llm_calls"), tokens=Sum("tokens"), hits=Sum("cache_hits"),
                          found=Sum("conflicts_found"), dropped_refs=Sum("dropped_invented_refs"),
                          dropped_snippets=Sum("dropped_bad_snippets"), unrelated=Sum("unrelated_pairs"),
                          known=Sum("known_claim_pairs"), confirmed=Sum("llm_confirmed"), rejected=Sum("llm_rejected"))
    with_call = runs.filter(batch_turns__gt=0)
    shared = dict(with_call.values_list("batch_turns").annotate(n=Count("id")).values_list("batch_turns", "n"))
    outcomes = dict(runs.values_list("outcome").annotate(n=Count("id")).values_list("outcome", "n"))
    conflicts = {
        tuple(sorted((low, high))): seen
        for low, high, seen in Conflict.objects.values_list("article_low__external_ref", "article_high__external_ref",
                                                            "times_seen")
    }
    turn_pairs: dict[int, set[tuple[str, str]]] = {}
    for external_id, low, high in ConflictOccurrence.objects.values_list(
        "turn__external_id", "conflict__article_low__external_ref", "conflict__article_high__external_ref"
    ):
        turn_pairs.setdefault(int(external_id.split("-")[1]), set()).add(tuple(sorted((low, high))))
    return {"calls": sums["calls"] or 0, "tokens": sums["tokens"] or 0, "cache_hits": sums["hits"] or 0,
            "outcomes": outcomes, "conflicts": conflicts, "verdicts": PairVerdict.objects.count(),
            "turn_pairs": [turn_pairs.get(i, set()) for i in range(len(events))],
            "dropped": (sums["dropped_refs"] or 0, sums["dropped_snippets"] or 0),
            "unrelated": sums["unrelated"] or 0, "known": sums["known"] or 0, "confirmed": sums["confirmed"] or 0,
            "rejected": sums["rejected"] or 0, "turns_with_call": with_call.count(), "shared": shared}


def recall(*, kb: KB, questions: list[Question], events: list[Event], turn_pairs: list[set]) -> dict:
    """Pair recall (planted pairs ever co-retrieved that were flagged at least once), turn-level recall
    (planted pairs per turn that the turn's detection flagged), and flags on pairs that were not planted."""
    co_retrieved: set = set()
    shown = hit = 0
    flagged: set = set()
    false_pairs: set = set()
    false_turns = 0
    for event, found in zip(events, turn_pairs):
        refs = questions[event.question].refs[:MAX_ARTICLES]
        planted_here = {tuple(sorted(p)) for p in itertools.combinations(refs, 2)} & kb.planted_pairs
        co_retrieved |= planted_here
        shown += len(planted_here)
        hit += len(planted_here & found)
        flagged |= found & kb.planted_pairs
        false_pairs |= found - kb.planted_pairs
        false_turns += len(found - kb.planted_pairs)
    return {"co_retrieved": len(co_retrieved), "flagged": len(flagged & co_retrieved),
            "pair_recall": len(flagged & co_retrieved) / len(co_retrieved) if co_retrieved else 1.0,
            "turn_shown": shown, "turn_hit": hit, "turn_recall": hit / shown if shown else 1.0,
            "false_pairs": false_pairs, "false_turn_flags": false_turns}

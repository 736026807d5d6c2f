"""A pure simulation of this design's LLM call count, for bench/detection_cost.py: the same cache rules and
agents.batching's own packing, on the generated texts. Checked against the real run, it then gives the
noise over other arrival draws and the sensitivity sweep.
"""
from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from dataclasses import dataclass

from _detection_fixtures import KB, Event, Question, arrivals, build_questions, build_replay
from _detection_replay import article_text

from agents.types import MAX_ARTICLES_CHECKED as MAX_ARTICLES


class ClaimsMemo:
    """Pairs the claim detector flags in a retrieval set, per set of refs, on the articles' generated texts,
    and each pair's claim alignment (what its excerpt shows, less the claim pairs judged before).

    Edits in this bench change filler sentences only, so a set's claim flags and a pair's alignment are taken as
    version-independent; the check against the real run shows how much that approximation costs.
    """

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.memo: dict[tuple[str, ...], frozenset] = {}
        self.alignments: dict[tuple[str, str], object] = {}

    def alignment(self, a: str, b: str):
        if (a, b) not in self.alignments:
            from agents.excerpts import PairAlignment
            from conflicts.services.detection import claim_vectors

            self.alignments[a, b] = PairAlignment(article_text(self.kb.articles[a]), article_text(self.kb.articles[b]),
                                                  vectors=claim_vectors(), year=dt.date.today().year)
        return self.alignments[a, b]

    def flagged(self, refs: tuple[str, ...]) -> frozenset:
        key = tuple(sorted(refs))
        if key not in self.memo:
            from agents.claims import detect_claim_conflicts
            from agents.detection import CONFIRM_BELOW
            from agents.excerpts import pair_excerpt
            from conflicts.services.detection import claim_vectors

            texts = {r: article_text(self.kb.articles[r]) for r in key}
            result = detect_claim_conflicts(articles=list(texts.values()), vectors=claim_vectors())
            # Never sent to the LLM: sure claim findings and pairs about different things (no aligned claims,
            # or only claims both articles state word for word), unless a claim finding awaits confirmation.
            sure = {f.refs for f in result.findings if f.confidence >= CONFIRM_BELOW}
            unsure = {f.refs for f in result.findings if f.confidence < CONFIRM_BELOW}
            year = dt.date.today().year
            unrelated = {(a, b) for a, b in itertools.combinations(key, 2) if (a, b) not in sure | unsure and (
                (a, b) in result.unrelated_pairs()
                or not pair_excerpt(texts[a], texts[b], vectors=claim_vectors(), year=year).related)}
            self.memo[key] = frozenset(sure | unrelated)
        return self.memo[key]


@dataclass
class Timing:
    """When turns arrive and how this design batches them (the settings' values, or a sweep's)."""

    arrival: list[float]
    wait_s: float
    max_turns: int
    max_pairs: int


def simulate_calls(*, questions: list[Question], events: list[Event], claims: ClaimsMemo, timing: Timing) -> int:
    """LLM calls of this design by its rules. A turn has pairs for the LLM when some pair of its first 20
    articles is neither settled by the claims (sure finding, or about different things) nor cached by
    (ref, version) for both sides. Such a turn joins the open window, or opens one (timing.wait_s); when the
    window closes its turns (at most max_turns; the rest form the next window at once) are packed into calls
    by agents.batching.pack_calls itself, and every pair sent is then cached (the oracle settles every pair
    it is asked, listed or left out), the claim pairs shown for its "no conflict" pairs judged consistent."""
    from agents.batching import pack_calls
    from agents.detection import STATUS_OK, DetectionPlan, DetectionReport
    from agents.types import ArticleText

    version: Counter = Counter()
    cache: set = set()
    settled: set[str] = set()  # claim pairs judged consistent (agents.excerpts)
    calls = 0
    window: list[DetectionPlan] = []
    ends = 0.0

    def unjudged(refs: tuple[str, ...], versions: dict[str, int]) -> list[tuple[str, str]]:
        flagged = claims.flagged(refs)
        left = [(a, b) for a, b in itertools.combinations(sorted(refs), 2)
                if (a, b) not in flagged and (a, versions[a], b, versions[b]) not in cache]
        # A pair whose aligned claim pairs were all judged before is settled (claim findings to confirm are
        # always sent; the few unsure findings of this KB are ignored here, as the memo does).
        return [(a, b) for a, b in left if claims.alignment(a, b).excerpt(settled=settled).related]

    def close(at: float) -> None:
        nonlocal calls, window, ends
        while window:
            taken, window = window[: timing.max_turns], window[timing.max_turns:]
            for plan in taken:  # what the claims and the cache leave when the worker takes it
                versions = {a.ref: int(a.body) for a in plan.articles}
                plan.unjudged[:] = unjudged(tuple(versions), versions)
            calls += len(pack_calls(taken, max_pairs=timing.max_pairs).calls)
            for plan in taken:
                versions = {a.ref: int(a.body) for a in plan.articles}
                cache.update((a, versions[a], b, versions[b]) for a, b in plan.unjudged)
                # The oracle judges every pair asked; a "no conflict" makes the claim pairs shown consistent.
                shown = [key for a, b in plan.unjudged if claims.kb.conflict(a, b) is None
                         for key in claims.alignment(a, b).excerpt(settled=settled).claim_pairs]
                settled.update(shown)
        ends = at

    for event, second in zip(events, timing.arrival):
        if window and ends <= second:
            close(ends)
        if event.edit_ref is not None:
            version[event.edit_ref] += 1
        refs = questions[event.question].refs[:MAX_ARTICLES]
        versions = {ref: version[ref] for ref in refs}
        pairs = unjudged(refs, versions)
        if not pairs:
            continue
        plan = DetectionPlan(DetectionReport(status=STATUS_OK), [ArticleText(ref=r, title="", body=str(versions[r]))
                                                                  for r in refs], dt.date.today(), unjudged=pairs)
        if not window:
            ends = second + timing.wait_s
        window.append(plan)
    close(float("inf"))
    return calls


def sweep(*, kb: KB, claims: ClaimsMemo, turns: int, questions_n: int, rate: float, timing_of, seed: int,
          zipf_s: float, edit_share: float, rates: tuple[float, ...]) -> list[tuple[str, float]]:
    """calls/turn of this design (= llm_calls_ratio: the seed policy makes one call per turn) when the replay,
    its popularity curve, the number of questions, the arrival rate or the wait change."""
    rows = []
    variants = [(t, zipf_s, questions_n, rate, None) for t in (turns, 3 * turns)]
    variants += [(turns, s, questions_n, rate, None) for s in (0.8, 1.2)]
    variants += [(turns, zipf_s, n, rate, None) for n in (questions_n // 2, questions_n * 2)]
    variants += [(turns, zipf_s, questions_n, r, None) for r in rates if r != rate]
    variants += [(turns, zipf_s, questions_n, rate, w) for w in (0.0, 0.5, 5.0)]
    for n_turns, s, n_questions, r, wait_s in variants:
        questions = build_questions(kb=kb, n_questions=n_questions, seed=seed + 1)
        events = build_replay(questions=questions, n_turns=n_turns, zipf_s=s, edit_share=edit_share, seed=seed + 2)
        timing = timing_of(arrivals(n=n_turns, rate=r, seed=seed + 3), wait_s)
        calls = simulate_calls(questions=questions, events=events, claims=claims, timing=timing)
        label = (f"turns={n_turns} zipf_s={s} questions={n_questions} rate={r:g}/s "
                 f"wait={timing.wait_s:g}s")
        rows.append((label, calls / n_turns))
    return rows

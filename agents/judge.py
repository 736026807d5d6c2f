"""The learned contradiction judge, as plain data: statement pairs in, label probabilities out.

The model itself (a MiniLM cross-encoder the project fine-tunes on its own labelled statement pairs, run
on ONNX Runtime) is loaded outside `agents` and passed in as a callable, like the sentence encoder:

    judge = CachedJudge(score_pairs)          # score_pairs(list[StatementPair]) -> np.ndarray (n, 4)
    verdicts = judge.judge(pairs)             # both orders averaged, cached per pair of texts

Labels: `contradicts` (same thing, cannot both be true), `consistent` (same fact, other words, units or
formats), `different_scope` (same topic, another plan, audience, branch, period, product or channel),
`unrelated`. A finding's confidence comes from `Calibration`, fitted on the judge's validation split.
"""
from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

LABELS = ("contradicts", "consistent", "different_scope", "unrelated")
CONTRADICTS, CONSISTENT, DIFFERENT_SCOPE, UNRELATED = range(len(LABELS))


@dataclass(frozen=True)
class StatementPair:
    text_a: str
    text_b: str
    heading_a: str = ""
    heading_b: str = ""

    def swapped(self) -> "StatementPair":
        return StatementPair(self.text_b, self.text_a, self.heading_b, self.heading_a)


def judge_input(text: str, heading: str = "") -> str:
    """What the cross-encoder reads for one side: the heading a statement sits under carries its scope."""
    text, heading = " ".join(text.split()), " ".join(heading.split())
    return f"{heading}: {text}" if heading else text


ScorePairs = Callable[[Sequence[StatementPair]], np.ndarray]


@dataclass(frozen=True)
class Verdict:
    probabilities: tuple[float, float, float, float]  # in LABELS order

    @property
    def label(self) -> str:
        return LABELS[int(np.argmax(self.probabilities))]

    @property
    def contradicts(self) -> float:
        return self.probabilities[CONTRADICTS]

    @property
    def settles_apart(self) -> float:
        """How sure the judge is that the two say compatible things about different scopes or subjects."""
        return self.probabilities[DIFFERENT_SCOPE] + self.probabilities[UNRELATED]


class CachedJudge:
    """The judge over `score_pairs`, each pair scored in both orders (averaged: the relation is symmetric),
    and remembered per pair of statement texts, so a retrieval set seen before costs no inference."""

    def __init__(self, score_pairs: ScorePairs, *, max_entries: int = 200_000):
        self.score_pairs = score_pairs  # the model itself, uncached
        self._cache: OrderedDict[tuple, Verdict] = OrderedDict()
        self._max = max_entries
        self.inferred = 0  # pairs actually sent to the model (both orders count once)

    @staticmethod
    def _key(pair: StatementPair) -> tuple:
        one, other = (pair.heading_a, pair.text_a), (pair.heading_b, pair.text_b)
        return (one, other) if one <= other else (other, one)

    def judge(self, pairs: Sequence[StatementPair]) -> list[Verdict]:
        keys = [self._key(p) for p in pairs]
        found = {key: self._cache[key] for key in keys if key in self._cache}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            ordered = [StatementPair(a[1], b[1], a[0], b[0]) for a, b in missing]
            both = self.score_pairs(ordered + [p.swapped() for p in ordered])
            half = len(ordered)
            probabilities = (np.asarray(both[:half]) + np.asarray(both[half:])) / 2
            self.inferred += half
            for key, row in zip(missing, probabilities):
                found[key] = Verdict(tuple(float(x) for x in row))
        for key in keys:  # most recently used last; the oldest go first when the cache is full
            self._cache[key] = found[key]
            self._cache.move_to_end(key)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return [found[key] for key in keys]


@dataclass(frozen=True)
class Calibration:
    """Maps the judge's contradiction probability to the precision measured at it on validation data
    (isotonic: monotone non-decreasing), and names the score from which precision reaches 0.9."""

    thresholds: tuple[float, ...]  # ascending raw scores where the calibrated value steps
    values: tuple[float, ...]  # calibrated value from each threshold on
    high_precision_score: float  # raw score at and above which validation precision >= HIGH_PRECISION
    report_score: float  # raw score at and above which a statement pair is reported at all
    settle_score: float  # p(different_scope) + p(unrelated) at and above which a pair is settled offline

    def confidence(self, score: float) -> float:
        index = bisect.bisect_right(self.thresholds, score) - 1
        return self.values[index] if index >= 0 else 0.0

    @classmethod
    def fit(cls, scores: Sequence[float], positives: Sequence[bool], *, high_precision: float = 0.9,
            report_precision: float = 0.6, settle_scores: Sequence[float] = (),
            settle_positives: Sequence[bool] = (), settle_precision: float = 0.98) -> "Calibration":
        """Isotonic regression (pool adjacent violators) of `positives` on `scores`, plus the lowest score
        whose upper tail reaches each precision (the tail: every pair scored at or above it)."""
        order = np.argsort(scores, kind="stable")
        xs = np.asarray(scores, dtype=float)[order]
        ys = np.asarray(positives, dtype=float)[order]
        blocks: list[list[float]] = []  # [sum, count, first x]
        for x, y in zip(xs, ys):
            blocks.append([y, 1.0, x])
            while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
                s, c, _ = blocks.pop()
                blocks[-1][0] += s
                blocks[-1][1] += c
        thresholds = tuple(float(b[2]) for b in blocks)
        values = tuple(round(float(b[0] / b[1]), 4) for b in blocks)
        return cls(thresholds=thresholds, values=values,
                   high_precision_score=tail_point(xs, ys, high_precision),
                   report_score=tail_point(xs, ys, report_precision),
                   settle_score=tail_point(np.asarray(settle_scores, dtype=float),
                                           np.asarray(settle_positives, dtype=float), settle_precision)
                   if len(settle_scores) else 1.01)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Calibration":
        raw = json.loads(text)
        return cls(thresholds=tuple(raw["thresholds"]), values=tuple(raw["values"]),
                   high_precision_score=raw["high_precision_score"], report_score=raw["report_score"],
                   settle_score=raw["settle_score"])


def tail_point(scores: np.ndarray, positives: np.ndarray, precision: float, *, min_support: int = 10) -> float:
    """The lowest score s such that, among pairs scored >= s, the share of positives is >= `precision`
    (with at least `min_support` pairs); above every score (1.01) when none reaches it."""
    if len(scores) == 0:
        return 1.01
    order = np.argsort(-scores, kind="stable")
    xs, ys = scores[order], positives[order]
    hits = np.cumsum(ys)
    counts = np.arange(1, len(xs) + 1)
    ok = (hits / counts >= precision) & (counts >= min_support)
    if not ok.any():
        return 1.01
    last = int(np.nonzero(ok)[0].max())
    return float(xs[last])

"""Benchmark: MACR suggestions (executable rules, calibrated, with abstention) beside the naive "newer wins" anchor.

For each data set, side by side, through the same parsing and reasoning code as `manage.py suggest_resolutions`
and with what the product gives the rules (conflicts.services.suggestions.suggestion_compute): the detector's
conflicting statements (snippets) and type for each labelled pair the offline claim detector finds in the set
(`run_detection(detector="claims")` with the judge of the settings, as a check without an LLM records them), so a
date rule reads the statement in conflict and not just its page. A labelled pair the detector misses keeps only
page-level facts (the product would show no suggestion for it; it is still scored). `--page-facts` leaves the
detector out (the figures before issue 31). Detector output is cached in var/bench/, keyed by the data file, the
detector's code and the judge artefact.
accuracy on pairs whose label `correct` is a ref (a side is determinable; "cannot tell" there counts as not
right) and abstention on pairs whose `correct` is null (the texts and dates cannot tell; any side named there
is wrong), for
- the rules alone (no threshold: every side a rule names is shown),
- the rules with calibrated confidence and the default threshold (what the product shows),
- the naive anchor: the newer `updated_at` wins, same or missing date → cannot tell.

Data sets: `dev` and `report` halves of bench/data/kb-conflicts-broad, and ../shared/datasets/kb-conflicts-dev.
The report half is held out: its figures are printed, never tuned on. `--write-priors` measures each built-in
rule's accuracy per situation on the dev half only and picks the default threshold there (the lowest confidence
at which the dev suggestions are still >= 0.95 precise, a side named on a "cannot tell" pair counting as wrong, and
no confidence level kept is on its own right less than 4 times in 5),
writing agents/macr/rule_priors.json. No LLM is called.

    .venv/bin/python bench/suggestions_quality.py [--quick] [--datasets dev,report,kb-dev] [--show-errors] [--page-facts]
    .venv/bin/python bench/suggestions_quality.py --datasets dev,kb-dev     # development: the report half untouched
    .venv/bin/python bench/suggestions_quality.py --write-priors
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from agents.macr.calibration import (  # noqa: E402
    MIN_BAND_PRECISION,
    PRIORS_PATH,
    SITUATION_POOLING,
    TARGET_PRECISION,
    Priors,
    builtin_priors,
    priors_from_json,
    situation,
    standing,
)
from agents.macr.rules import ConflictPair, executable_rules  # noqa: E402
from agents.macr.sets import RetrievalSet, parse_set_line, suggest_for_set  # noqa: E402
from agents.types import ArticleText, pair_key  # noqa: E402

BROAD = REPO / "bench" / "data" / "kb-conflicts-broad"
DATASETS = {
    "dev": BROAD / "dev.jsonl",
    "report": BROAD / "report.jsonl",
    "kb-dev": REPO.parent / "shared" / "datasets" / "kb-conflicts-dev" / "dev.jsonl",
}
TARGET_ACCURACY, TARGET_ABSTENTION = 0.95, 0.90
DETECTION_CACHE = REPO / "var" / "bench"
# What the detector's findings depend on besides the data: its code and the judge artefact.
DETECTOR_INPUTS = ("agents/claims/*.py", "agents/detection.py", "agents/judge*.py", "agents/excerpts.py",
                   "agents/judge_artefact/*")

Detections = dict  # set id -> {(ref, ref): {"type", "snippets"}}


def naive_newer_wins(a: ArticleText, b: ArticleText) -> str | None:
    """The anchor: the newer `updated_at` wins; same (or missing) date → cannot tell."""
    if a.updated_at is None or b.updated_at is None or a.updated_at == b.updated_at:
        return None
    return a.ref if a.updated_at > b.updated_at else b.ref


@dataclass
class Tally:
    determinable: int = 0
    undeterminable: int = 0
    right: int = 0
    abstained_null: int = 0
    abstained_determinable: int = 0

    def add(self, *, winner: str | None, correct: str | None) -> None:
        if correct is None:
            self.undeterminable += 1
            self.abstained_null += winner is None
        else:
            self.determinable += 1
            self.right += winner == correct
            self.abstained_determinable += winner is None

    @property
    def accuracy(self) -> float:
        return self.right / self.determinable if self.determinable else 0.0

    @property
    def abstention(self) -> float:
        return self.abstained_null / self.undeterminable if self.undeterminable else 0.0

    @property
    def precision(self) -> float:
        """Right among the sides named (a side named on a "cannot tell" pair is wrong)."""
        named = (self.determinable - self.abstained_determinable) + (self.undeterminable - self.abstained_null)
        return self.right / named if named else 0.0


@dataclass
class Outcome:
    raw: Tally = field(default_factory=Tally)
    calibrated: Tally = field(default_factory=Tally)
    naive: Tally = field(default_factory=Tally)
    rule_use: dict = field(default_factory=lambda: defaultdict(int))
    with_statements: int = 0  # labelled pairs the detector found: the rules read their statements in conflict
    errors: list = field(default_factory=list)


def labelled_sets(path: Path, *, quick: bool, detections: Detections | None = None):
    """(retrieval set, labels by pair) per line; with `detections`, each labelled pair the detector found
    carries the detector's type and snippets, as the product's suggestion input does."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if quick:
        lines = lines[::2]  # every other set: same mix of businesses, half the time
    for number, text in enumerate(lines, start=1):
        labels = {tuple(sorted(c["refs"])): c.get("correct") for c in json.loads(text).get("conflicts", [])}
        retrieval_set = parse_set_line(line=text, line_number=number, today=dt.date.today())
        if detections is not None:
            retrieval_set = with_detector_statements(retrieval_set, detections.get(str(retrieval_set.id), {}))
        yield retrieval_set, labels


def with_detector_statements(retrieval_set: RetrievalSet, found: dict) -> RetrievalSet:
    conflicts = []
    for request in retrieval_set.conflicts:
        finding = found.get(request.refs)
        if finding is not None:
            request = dataclasses.replace(request, type=finding["type"], snippets=dict(finding["snippets"]))
        conflicts.append(request)
    return dataclasses.replace(retrieval_set, conflicts=conflicts)


def _detector_key(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes())
    for pattern in DETECTOR_INPUTS:
        for source in sorted(REPO.glob(pattern)):
            digest.update(source.name.encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def detector_statements(name: str, path: Path, *, quick: bool = False) -> Detections:
    """The offline claim detector's findings on every set of `path` (every other one with `quick`: the product's
    check without an LLM), as {set id: {refs: {"type", "snippets"}}}; computed once per data file, detector code
    and judge."""
    key = _detector_key(path)
    cache = DETECTION_CACHE / f"suggestions-detections-{name}-{key}.json"
    if quick and not cache.is_file():  # the whole file's findings serve a quick run too; a quick run keeps its own
        cache = DETECTION_CACHE / f"suggestions-detections-{name}-quick-{key}.json"
    if cache.is_file():
        raw = json.loads(cache.read_text(encoding="utf-8"))
    else:
        import django  # noqa: PLC0415 - only the detector needs settings (the judge) and the sentence model

        django.setup()
        from django.conf import settings  # noqa: PLC0415

        from agents.claims import ClaimVectors  # noqa: PLC0415
        from agents.detection import run_detection  # noqa: PLC0415
        from agents.judge_onnx import judge_setup  # noqa: PLC0415
        from articles.embeddings import embed_texts  # noqa: PLC0415

        vectors = ClaimVectors(embed_texts)
        judge = judge_setup(settings.JUDGE_DIR, mode=settings.JUDGE_MODE)
        raw = {}
        for retrieval_set, _ in labelled_sets(path, quick=quick):
            articles = list(retrieval_set.articles.values())
            report = run_detection(articles=articles, detector="claims", now=retrieval_set.now,
                                   claim_vectors=vectors, claim_judge=judge)
            raw[str(retrieval_set.id)] = [{"refs": list(f.refs), "type": f.type, "snippets": dict(f.snippets)}
                                          for f in report.findings]
        DETECTION_CACHE.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    return {set_id: {pair_key(*f["refs"]): f for f in findings} for set_id, findings in raw.items()}


def evaluate(path: Path, *, threshold: float, priors: Priors, quick: bool, detections: Detections | None) -> Outcome:
    outcome, rules = Outcome(), executable_rules()
    for retrieval_set, labels in labelled_sets(path, quick=quick, detections=detections):
        raw = suggest_for_set(retrieval_set=retrieval_set, rules=rules, min_confidence=0.0, priors=priors)
        calibrated = suggest_for_set(retrieval_set=retrieval_set, rules=rules, min_confidence=threshold, priors=priors)
        outcome.with_statements += sum(bool(request.snippets) for request in retrieval_set.conflicts)
        for plain, shown in zip(raw, calibrated):
            correct = labels[plain.refs]
            a, b = (retrieval_set.articles[ref] for ref in plain.refs)
            outcome.raw.add(winner=plain.winner, correct=correct)
            outcome.calibrated.add(winner=shown.winner, correct=correct)
            outcome.naive.add(winner=naive_newer_wins(a, b), correct=correct)
            for rule_id in shown.rules if shown.winner else ():
                outcome.rule_use[rule_id] += 1
            if shown.winner != correct:
                kind = "answered where null" if correct is None else f"want {correct}, got {shown.winner}"
                outcome.errors.append(f"  {retrieval_set.id} {plain.refs} {kind}: {shown.explanation}")
    return outcome


def measure_priors(path: Path, *, detections: Detections | None) -> dict:
    """Per built-in rule, by standing and by situation: [right, decided] on the labelled pairs where it named
    a side; and the threshold for TARGET_PRECISION over the confidences those priors give."""
    by_standing: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    by_situation: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    samples = []  # (rule ids, standing, situation, right) per suggestion with a side
    empty = Priors(rules={}, threshold=0.0)
    for retrieval_set, labels in labelled_sets(path, quick=False, detections=detections):
        for suggestion in suggest_for_set(retrieval_set=retrieval_set, rules=executable_rules(), min_confidence=0.0,
                                          priors=empty):
            if suggestion.winner is None:
                continue
            pair = _pair(retrieval_set, suggestion.refs)
            where, kinds = standing(pair, suggestion.winner), situation(pair, suggestion.winner)
            right = labels[suggestion.refs] == suggestion.winner
            for rule_id in suggestion.rules:
                for table, key in ((by_standing, where), (by_situation, kinds)):
                    table[rule_id][key][0] += right
                    table[rule_id][key][1] += 1
            samples.append((suggestion.rules, where, kinds, right))
    rules = {rule_id: dict(counts) for rule_id, counts in by_standing.items()}
    situations = {rule_id: dict(counts) for rule_id, counts in by_situation.items()}
    priors = priors_from_json({"rules": rules, "situations": situations, "threshold": 0.0})
    scored = []
    for rule_ids, where, kinds, right in samples:
        values = [priors.measured(rule_id, situation_key=kinds, standing_key=where)[1] for rule_id in rule_ids]
        scored.append((sum(values) / len(values), right))
    threshold = choose_threshold(scored, target=TARGET_PRECISION)
    return {
        "source": "bench/data/kb-conflicts-broad/dev.jsonl (written by bench/suggestions_quality.py --write-priors"
                  + (", page-level facts only)" if detections is None else ", with the detector's statements)"),
        "target_precision": TARGET_PRECISION,
        "situation_pooling": SITUATION_POOLING,
        "min_band_precision": MIN_BAND_PRECISION,
        "threshold": threshold,
        "rules": rules,
        "situations": situations,
    }


def choose_threshold(scored: list[tuple[float, bool]], *, target: float, band_floor: float = MIN_BAND_PRECISION) -> float:
    """The lowest confidence at which the suggestions at or above it are still `target` precise, and no
    confidence level kept is itself right less often than `band_floor` (a level that is a coin flip on its
    own is not shown as advice, however many sure suggestions above it carry the average)."""
    by_confidence: dict[float, list[bool]] = defaultdict(list)
    for confidence, right in scored:
        by_confidence[round(confidence, 4)].append(right)
    kept_right = kept = 0
    threshold = 1.0
    for confidence in sorted(by_confidence, reverse=True):
        group = by_confidence[confidence]
        if (kept_right + sum(group)) / (kept + len(group)) < target or sum(group) / len(group) < band_floor:
            break
        kept_right, kept, threshold = kept_right + sum(group), kept + len(group), confidence
    return math.floor(threshold * 1000) / 1000


def _pair(retrieval_set: RetrievalSet, refs: tuple[str, str]) -> ConflictPair:
    request = next(request for request in retrieval_set.conflicts if request.refs == refs)
    return ConflictPair(a=retrieval_set.articles[refs[0]], b=retrieval_set.articles[refs[1]], type=request.type,
                        snippets=request.snippets)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="dev,report,kb-dev", help="comma-separated: dev, report, kb-dev")
    parser.add_argument("--quick", action="store_true", help="every other retrieval set (well under a minute)")
    parser.add_argument("--show-errors", action="store_true",
                        help="print each wrong or non-abstaining suggestion (refused on the held-out report half)")
    parser.add_argument("--threshold", type=float, default=None, help="instead of the default chosen on dev")
    parser.add_argument("--page-facts", action="store_true",
                        help="give the rules page-level facts only (no detector statements): the figures before issue 31")
    parser.add_argument("--write-priors", action="store_true",
                        help=f"measure the built-in rules on the dev half and write {PRIORS_PATH.name}")
    options = parser.parse_args()

    if options.write_priors:
        data = measure_priors(DATASETS["dev"],
                              detections=None if options.page_facts else detector_statements("dev", DATASETS["dev"]))
        PRIORS_PATH.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {PRIORS_PATH.relative_to(REPO)}: threshold {data['threshold']} for precision >= {TARGET_PRECISION}")
        for rule_id, by_standing in sorted(data["rules"].items()):
            print(f"  {rule_id}: " + ", ".join(f"{s} {r}/{n}" for s, (r, n) in sorted(by_standing.items())))
            print("    " + ", ".join(f"{s} {r}/{n}" for s, (r, n) in sorted(data["situations"][rule_id].items())))
        builtin_priors.cache_clear()

    priors = builtin_priors()
    threshold = priors.threshold if options.threshold is None else options.threshold
    names = [name.strip() for name in options.datasets.split(",") if name.strip()]
    unknown = [name for name in names if name not in DATASETS]
    if unknown:
        print(f"unknown data set(s) {unknown}; choose from {sorted(DATASETS)}", file=sys.stderr)
        return 2
    if options.show_errors and "report" in names:
        print("--show-errors reads individual pairs: not on the held-out report half", file=sys.stderr)
        return 2
    figures = []
    for name in names:
        path = DATASETS[name]
        if not path.is_file():
            print(f"{name}: not found at {path}; skipped", file=sys.stderr)
            continue
        detections = None if options.page_facts else detector_statements(name, path, quick=options.quick)
        started = time.perf_counter()
        outcome = evaluate(path, threshold=threshold, priors=priors, quick=options.quick, detections=detections)
        elapsed = time.perf_counter() - started
        tally = outcome.calibrated
        print(f"\n{name}: {path}{' (quick: every other set)' if options.quick else ''}")
        print(f"conflicts: {tally.determinable + tally.undeterminable} ({tally.determinable} with a determinable side, "
              f"{tally.undeterminable} where the texts cannot tell); {elapsed * 1000:.0f} ms")
        print("rules given the detector's statements in conflict on "
              + (f"{outcome.with_statements} of them (the rest: page-level facts)" if detections is not None
                 else "none of them (--page-facts)"))
        print(f"{'method':<44}{'accuracy (determinable)':>26}{'abstention (null)':>20}{'precision':>11}")
        rows = [
            ("rules, no threshold", outcome.raw),
            (f"rules, calibrated, threshold {threshold:.3f}", outcome.calibrated),
            ("naive: newer updated_at wins", outcome.naive),
        ]
        for label, t in rows:
            accuracy = f"{t.accuracy:.3f} ({t.right}/{t.determinable})"
            abstention = f"{t.abstention:.3f} ({t.abstained_null}/{t.undeterminable})"
            print(f"{label:<44}{accuracy:>26}{abstention:>20}{t.precision:>11.3f}")
        print(f"calibrated: cannot tell on {tally.abstained_determinable} determinable pairs (counted as not right); "
              "deciding rules: " + ", ".join(f"{r} {n}" for r, n in sorted(outcome.rule_use.items())))
        if options.show_errors:
            print("\n".join(outcome.errors))
        key = name.replace("-", "_")
        figures.append(f"figure: suggestions_{key}_accuracy {tally.accuracy:.3f} ratio target >= {TARGET_ACCURACY}")
        figures.append(f"figure: suggestions_{key}_abstention {tally.abstention:.3f} ratio target >= {TARGET_ABSTENTION}")
        # the anchor beside them: what "the newer page wins" alone gives on the same pairs
        figures.append(f"figure: suggestions_{key}_naive_newer_wins_accuracy {outcome.naive.accuracy:.3f} ratio anchor")
        figures.append(f"figure: suggestions_{key}_naive_newer_wins_abstention {outcome.naive.abstention:.3f} ratio anchor")
    print()
    print("LLM calls per suggestion: 0.0 (executable rules only)")
    print("\n".join(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The MACR paper's experiments over the shared datasets, as plain functions (manage.py macr_eval is the CLI).

Datasets (each read from its own files; formats checked by their keys, see the loaders):
- ConflictBank (grouped file, or SABER's one-row-per-evidence file, grouped here): the question with
  N = 2, 3 or 4 contexts — correct + misinformation (+ temporal) (+ semantic), shuffled by a hash of
  the question so the correct one is not always first. Gold: the true object. EM = normalised
  equality; ROUGE-L F against it.
- RAMDocs: the question with all its documents. Gold: every valid answer; EM (MADAM-RAG's) = every
  gold answer and no wrong answer appears in the prediction; ROUGE-L F against the gold answers
  joined with "; ".
- kb-conflicts-dev: one item per labelled conflicting pair, the task the product needs: which of the
  two articles is right (its ref), or "cannot tell" when the label is null. EM = the ref (or
  "cannot tell") exactly; ROUGE-L equals EM there (a ref is atomic: no partial credit). Direct
  (no context) cannot name an article it has not seen, so it is not run there.

Methods: direct (closed book), icl (all contexts in one prompt), macr, macr_no_kar (no knowledge
assessment & retrieval), macr_cot (assessment & retrieval, then chain-of-thought instead of the
Analyzer/Reasoner agents). There is no external corpus offline, so MACR's external path (H ≥ τ)
retrieves nothing and proceeds without C₀; the internal path (H < τ) works as in the paper.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents.llm import LLMConfig, LLMError
from agents.macr.calls import CallMeter, json_call
from agents.macr.entropy import Embed
from agents.macr.pipeline import run_macr
from agents.macr.prompts import (
    ANSWER_SCHEMA,
    ANSWER_SCHEMA_NAME,
    CANNOT_TELL,
    DATA_NOT_INSTRUCTIONS,
    SubjectHint,
    date_line,
    quote_sources,
)
from agents.macr.rules import Rule
from agents.types import ArticleText

DATASETS = ("conflictbank", "ramdocs", "kb-conflicts-dev")
METHODS = ("direct", "icl", "macr", "macr_no_kar", "macr_cot")
CONFLICTBANK_ORDER = ("correct", "misinformation", "temporal", "semantic")


# --- metrics --------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({char: " " for char in string.punctuation})


def normalise_text(text: str) -> str:
    """SQuAD-style: lower case, punctuation to spaces, articles dropped, whitespace collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def exact_match(prediction: str, gold: str) -> bool:
    return normalise_text(prediction) == normalise_text(gold)


def _contains(haystack: str, needle: str) -> bool:
    needle, haystack = normalise_text(needle), normalise_text(haystack)
    return bool(needle) and f" {needle} " in f" {haystack} "


def all_gold_no_wrong(prediction: str, golds: Sequence[str], wrong: Sequence[str]) -> bool:
    """MADAM-RAG's exact match: every gold answer appears and no wrong answer does."""
    return all(_contains(prediction, gold) for gold in golds) and not any(_contains(prediction, w) for w in wrong)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for token_a in a:
        current = [0]
        for j, token_b in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if token_a == token_b else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l_f(prediction: str, reference: str) -> float:
    """ROUGE-L F1 on normalised word tokens: LCS / len for precision and recall, their harmonic mean."""
    pred, ref = normalise_text(prediction).split(), normalise_text(reference).split()
    lcs = lcs_length(pred, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


# --- items -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EvalItem:
    dataset: str  # the table's column label, e.g. "conflictbank N=3"
    id: str
    question: str
    contexts: tuple[ArticleText, ...]
    golds: tuple[str, ...]
    now: dt.date
    wrong: tuple[str, ...] = ()
    focus: tuple[str, str] | None = None  # arbitration items: which of these two refs is right
    metric: str = "em"  # em | all_gold | ref
    subject: SubjectHint | None = None

    @property
    def is_arbitration(self) -> bool:
        return self.focus is not None

    def score(self, prediction: str) -> tuple[float, float]:
        if self.metric == "all_gold":
            em = all_gold_no_wrong(prediction, self.golds, self.wrong)
            return float(em), rouge_l_f(prediction, "; ".join(self.golds))
        em = any(exact_match(prediction, gold) for gold in self.golds)
        if self.metric == "ref":
            return float(em), float(em)  # a ref is atomic: "kb-338" shares no meaning with "kb-451"
        return float(em), max(rouge_l_f(prediction, gold) for gold in self.golds)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _find_file(directory: Path, *, keys: set[str]) -> tuple[Path, list[dict]] | None:
    """The first .jsonl file in `directory` whose first record has all `keys` (read from the files themselves)."""
    for path in sorted(directory.glob("*.jsonl")):
        rows = _jsonl(path)
        if rows and keys <= set(rows[0]):
            return path, rows
    return None


def _shuffle_key(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def load_conflictbank(directory: Path, *, contexts: int, today: dt.date) -> list[EvalItem]:
    if contexts not in (2, 3, 4):
        raise ValueError("ConflictBank has 2, 3 or 4 contexts per question")
    wanted_types = CONFLICTBANK_ORDER[:contexts]
    grouped = _find_file(directory, keys={"question", "answer", "evidence"})
    records: list[dict] = []
    if grouped is not None:
        records = grouped[1]
    else:
        flat = _find_file(directory, keys={"raw_idx", "question", "ground_truth", "ck_text", "ck_relation"})
        if flat is None:
            raise FileNotFoundError(f"no ConflictBank file (grouped or SABER rows) in {directory}")
        by_question: dict[int, dict] = {}
        relation_type = {"supportive": "correct"}
        for row in flat[1]:
            record = by_question.setdefault(row["raw_idx"], {
                "raw_idx": row["raw_idx"], "question": row["question"], "answer": row["ground_truth"][0],
                "subject": (row.get("metadata") or {}).get("subject", ""), "evidence": [],
            })
            record["evidence"].append({"type": relation_type.get(row["ck_relation"], row["ck_relation"]),
                                       "text": row["ck_text"]})
        records = list(by_question.values())
    items = []
    for record in records:
        by_type = {evidence["type"]: evidence for evidence in record["evidence"]}
        if not all(kind in by_type for kind in wanted_types):
            continue
        chosen = sorted(wanted_types, key=lambda kind: _shuffle_key(record["raw_idx"], kind))
        contexts_ = tuple(
            ArticleText(ref=f"ctx-{index}", title="", body=by_type[kind]["text"], source="web")
            for index, kind in enumerate(chosen, start=1)
        )
        items.append(EvalItem(
            dataset=f"conflictbank N={contexts}", id=str(record["raw_idx"]), question=record["question"],
            contexts=contexts_, golds=(record["answer"],), now=today,
            subject=SubjectHint(titles=(record.get("subject") or "",)) if record.get("subject") else None,
        ))
    return items


def load_ramdocs(directory: Path, *, today: dt.date) -> list[EvalItem]:
    found = _find_file(directory, keys={"question", "documents", "gold_answers", "wrong_answers"})
    if found is None:
        raise FileNotFoundError(f"no RAMDocs file in {directory}")
    items = []
    for index, record in enumerate(found[1]):
        contexts = tuple(
            ArticleText(ref=f"doc-{number}", title="", body=document["text"], source="web")
            for number, document in enumerate(record["documents"], start=1)
        )
        items.append(EvalItem(
            dataset="ramdocs", id=str(index), question=record["question"], contexts=contexts,
            golds=tuple(record["gold_answers"]), wrong=tuple(record["wrong_answers"]), now=today, metric="all_gold",
        ))
    return items


def load_kb_conflicts(directory: Path, *, today: dt.date) -> list[EvalItem]:
    found = _find_file(directory, keys={"id", "question", "articles", "conflicts"})
    if found is None:
        raise FileNotFoundError(f"no kb-conflicts file in {directory}")
    items = []
    for record in found[1]:
        articles = {
            raw["ref"]: ArticleText(
                ref=raw["ref"], title=raw.get("title") or "", body=raw.get("body") or "",
                updated_at=dt.date.fromisoformat(raw["updated_at"][:10]) if raw.get("updated_at") else None,
                source=raw.get("source") or "faq",
            )
            for raw in record["articles"]
        }
        now = dt.date.fromisoformat(record["now"]) if record.get("now") else today
        for conflict in record["conflicts"]:
            a, b = sorted(conflict["refs"])
            items.append(EvalItem(
                dataset="kb-conflicts-dev", id=f"{record['id']}:{a}|{b}", question=record["question"],
                contexts=(articles[a], articles[b]), golds=(conflict.get("correct") or CANNOT_TELL,), now=now,
                focus=(a, b), metric="ref", subject=SubjectHint(titles=(articles[a].title, articles[b].title)),
            ))
    return items


def load_items(*, data_dir: Path, dataset: str, contexts: Sequence[int], today: dt.date) -> list[EvalItem]:
    if dataset == "conflictbank":
        return [item for n in contexts for item in load_conflictbank(data_dir / "conflictbank", contexts=n, today=today)]
    if dataset == "ramdocs":
        return load_ramdocs(data_dir / "ramdocs", today=today)
    if dataset == "kb-conflicts-dev":
        return load_kb_conflicts(data_dir / "kb-conflicts-dev", today=today)
    raise ValueError(f"unknown dataset {dataset!r}; expected one of {DATASETS}")


# --- methods ---------------------------------------------------------------------------------------

DIRECT_SYSTEM = (
    "Answer the question from your own knowledge in one short phrase (a name, number, date or a few words). "
    "If several different entities share the name in the question, give every valid answer separated by \"; \"."
)
ICL_SYSTEM = (
    "Answer the question using the sources below, in one short phrase (a name, number, date or a few words). "
    "If the sources are about different entities sharing the name, give every valid answer separated by \"; \". "
    + DATA_NOT_INSTRUCTIONS
)
ARBITRATE_SYSTEM = (
    "Two knowledge-base articles contradict each other on the customer's question. Using the articles (their "
    "text, kind and update dates) say which one is right at the current date: answer with its ref exactly, or "
    f"\"{CANNOT_TELL}\" if the texts and dates cannot tell. " + DATA_NOT_INSTRUCTIONS
)


@dataclass
class Prediction:
    text: str
    calls: int  # completions actually sent, failed ones included
    failure: str | None = None  # "<step>: LLM <reason> (<detail>)" when the method stopped
    errors: Counter = field(default_factory=Counter)  # LLMError reason -> count
    logprob_fallbacks: int = 0  # assessments weighted equally because the endpoint sent no log-probabilities

    @classmethod
    def metered(cls, text: str, meter: CallMeter, failure: str | None = None) -> "Prediction":
        return cls(text, meter.calls, failure, Counter(meter.errors), meter.logprob_fallbacks)


@dataclass
class EvalSettings:
    config: LLMConfig
    rules: Sequence[Rule]
    embed: Embed | None
    threshold: float
    samples: int = 5
    logprobs: bool = True


def predict(*, item: EvalItem, method: str, settings: EvalSettings) -> Prediction | None:
    """One method's prediction on one item; None when the method does not apply (direct on arbitration)."""
    config = settings.config
    meter = CallMeter()
    try:
        if method == "direct":
            if item.is_arbitration:
                return None
            user = "\n".join([date_line(item.now), f"Question: {item.question}"])
            parsed = json_call(meter=meter, step="direct", config=config, system=DIRECT_SYSTEM, user=user,
                               schema=ANSWER_SCHEMA, schema_name=ANSWER_SCHEMA_NAME)
            return Prediction.metered(parsed["answer"].strip(), meter)
        if method == "icl":
            system = ARBITRATE_SYSTEM if item.is_arbitration else ICL_SYSTEM
            user = "\n\n".join([date_line(item.now), "Sources:", quote_sources(item.contexts), f"Question: {item.question}"])
            parsed = json_call(meter=meter, step="icl", config=config, system=system, user=user,
                               schema=ANSWER_SCHEMA, schema_name=ANSWER_SCHEMA_NAME)
            return Prediction.metered(parsed["answer"].strip(), meter)
    except LLMError:
        return Prediction.metered("", meter, meter.error_details[-1])
    if method not in ("macr", "macr_no_kar", "macr_cot"):
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    run = run_macr(
        question=item.question, sources=item.contexts, now=item.now, config=config, rules=settings.rules,
        embed=settings.embed, threshold=settings.threshold, retrieve=None, subject=item.subject,
        focus=item.focus, focus_type="other", use_kar=method != "macr_no_kar",
        reasoner="cot" if method == "macr_cot" else "agents", samples=settings.samples, logprobs=settings.logprobs,
    )
    if run.failure:
        return Prediction.metered("", run.meter, run.failure)
    if item.is_arbitration:
        if method == "macr_cot":
            # The chain-of-thought variant answers the question; ask it for the ref the same way.
            return Prediction.metered(_ref_or_cannot_tell(run.answer or "", item.focus), run.meter)
        winner = run.suggestion.winner if run.suggestion else None
        return Prediction.metered(winner or CANNOT_TELL, run.meter)
    return Prediction.metered(run.answer or "", run.meter)


def _ref_or_cannot_tell(text: str, focus: tuple[str, str]) -> str:
    named = [ref for ref in focus if ref in text]
    return named[0] if len(named) == 1 else CANNOT_TELL


# --- the run and its table -------------------------------------------------------------------------

@dataclass
class Cell:
    items: int = 0
    em: float = 0.0
    rouge: float = 0.0
    calls: int = 0
    failures: int = 0

    def add(self, *, em: float, rouge: float, calls: int, failed: bool) -> None:
        self.items += 1
        self.em += em
        self.rouge += rouge
        self.calls += calls
        self.failures += int(failed)


@dataclass
class EvalReport:
    cells: dict[tuple[str, str], Cell] = field(default_factory=lambda: defaultdict(Cell))  # (dataset, method)
    datasets: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)  # LLMError reason -> count, over every call of the run
    logprob_fallbacks: int = 0


def evaluate(
    *, items: Sequence[EvalItem], methods: Sequence[str], settings: EvalSettings,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    report = EvalReport(methods=list(methods))
    for item in items:
        if item.dataset not in report.datasets:
            report.datasets.append(item.dataset)
        for method in methods:
            prediction = predict(item=item, method=method, settings=settings)
            if prediction is None:
                continue
            em, rouge = item.score(prediction.text) if prediction.failure is None else (0.0, 0.0)
            report.cells[(item.dataset, method)].add(em=em, rouge=rouge, calls=prediction.calls,
                                                     failed=prediction.failure is not None)
            report.errors.update(prediction.errors)
            report.logprob_fallbacks += prediction.logprob_fallbacks
            report.records.append({
                "dataset": item.dataset, "id": item.id, "method": method, "prediction": prediction.text,
                "golds": list(item.golds), "em": em, "rouge_l": round(rouge, 4), "llm_calls": prediction.calls,
                "failure": prediction.failure, "errors": dict(prediction.errors),
                "logprob_fallbacks": prediction.logprob_fallbacks,
            })
            if progress:
                progress(f"{item.dataset} {item.id} {method}: em={em:.0f} rouge_l={rouge:.2f} calls={prediction.calls}"
                         + (f" FAILED {prediction.failure}" if prediction.failure else ""))
    return report


def format_table(report: EvalReport) -> str:
    """Paper-style: one row per method, per dataset EM and ROUGE-L (in %), then LLM calls per question."""
    width = 22
    header = f"{'method':<13}" + "".join(f"{dataset:>{width}}" for dataset in report.datasets)
    sub = f"{'':<13}" + "".join(f"{'EM   R-L  calls/q':>{width}}" for _ in report.datasets)
    lines = [header, sub, "-" * len(header)]
    for method in report.methods:
        row = f"{method:<13}"
        for dataset in report.datasets:
            cell = report.cells.get((dataset, method))
            if cell is None or cell.items == 0:
                row += f"{'n/a':>{width}}"
                continue
            text = f"{100 * cell.em / cell.items:5.1f} {100 * cell.rouge / cell.items:5.1f} {cell.calls / cell.items:6.1f}"
            row += f"{text:>{width}}"
        lines.append(row)
    lines.append("-" * len(header))
    counts = ", ".join(
        f"{dataset}: {max((report.cells[(dataset, m)].items for m in report.methods if (dataset, m) in report.cells), default=0)} items"
        for dataset in report.datasets
    )
    failures = sum(cell.failures for cell in report.cells.values())
    lines.append(f"items per dataset: {counts}; failed predictions (scored 0): {failures}")
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(report.errors.items())) or "none"
    lines.append(f"LLM errors by reason: {reasons}; assessments without log-probabilities (equal weights): "
                 f"{report.logprob_fallbacks}")
    return "\n".join(lines)


# --- embeddings for assessment ----------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def lexical_embed(texts: list[str], *, dimensions: int = 512) -> np.ndarray:
    """Hashed bag of words: a model-free stand-in for MiniLM (for CI and machines without the model).
    Cosine then measures word overlap, not meaning; real runs use articles.embeddings.embed_texts."""
    vectors = np.zeros((len(texts), dimensions))
    for row, text in enumerate(texts):
        for word in _WORD.findall(text.lower()):
            vectors[row, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % dimensions] += 1.0
    return vectors


def textual_rules_from_file(path: Path) -> list[Rule]:
    """Textual rules from a JSON list of {id, type, condition, resolution[, priority]} (e.g. an induction run's output)."""
    rules = []
    for raw in json.loads(path.read_text(encoding="utf-8")):
        rules.append(Rule(id=raw["id"], type=raw.get("type") or "*", condition=raw["condition"],
                          resolution=raw["resolution"], origin="induced", kind="textual",
                          priority=int(raw.get("priority", 35))))
    return rules

"""igd_eval's items, methods and metrics (the IGD paper's setting: one question, one context that agrees with the
world or contradicts it, an intent).

Items per dataset (read from ../shared/datasets by the command; nothing here reads files the tests need):
- conflictbank: per question a *faithful* item (the correct evidence) and a *conflict* item (the misinformation
  evidence); context answer = the evidence's object, world answer = the true object.
- ramdocs: a faithful item from a correct document and, when the question has one, a conflict item from a misinfo
  document (context answer = its answer, world answers = the gold answers).
- kb-conflicts-dev: per labelled pair with a trusted side, a faithful item (the trusted article) and a conflict item
  (the other one); answers are the figures (prices, numbers, times, phone digits) one side states and the other
  does not, so only pairs that differ in a figure are used. A fictional business has no world answer a model could
  know, so its conflict items count for context accuracy only.

Metrics by normalised alias match: faithful accuracy (faithful items), context accuracy and world accuracy
(conflict items), the Intent-Aligned score (macro average of faithful accuracy and the intent's conflict accuracy:
context in STRICT, world in TRUTH), and the parametric recovery rate (conflict items whose closed-book answer is
right: the share the method answers right too).
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from agents.answer import Embed, Passage, select_sentences
from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import Backend, igd_generate, plain_greedy
from agents.igd.prompts import SHORT, alias_match, build_prompts, closed_book_prompt

DATASETS = ("conflictbank", "ramdocs", "kb-conflicts-dev")
METHODS = ("closed_book", "direct", "igd", "igd_no_token", "igd_single_memory", "igd_no_gates")
EVIDENCE_CHARS = 1200  # per context: CPU budget for a shared machine, and inside a small model's window
EVAL_PARAMS = IGDParams(max_new_tokens=12)
ABLATIONS = {
    "igd": {},
    "igd_no_token": {"token_correction": False},
    "igd_single_memory": {"memory_variants": 1},
    "igd_no_gates": {"gates": False},
}


@dataclass(frozen=True)
class EvalItem:
    dataset: str
    id: str
    question: str
    context: str
    group: str  # "faithful" | "conflict"
    context_answers: tuple[str, ...]
    world_answers: tuple[str, ...]  # empty: the world answer is not something a model could know


def _jsonl(path: Path) -> Iterable[dict]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def conflictbank_items(path: Path) -> list[EvalItem]:
    items = []
    for record in _jsonl(path):
        by_type = {e["type"]: e for e in record["evidence"]}
        key = str(record.get("raw_idx"))
        if "correct" in by_type:
            e = by_type["correct"]
            items.append(EvalItem("conflictbank", f"{key}-f", record["question"], e["text"][:EVIDENCE_CHARS], "faithful",
                                  (e["answer"],), (record["answer"],)))
        if "misinformation" in by_type:
            e = by_type["misinformation"]
            items.append(EvalItem("conflictbank", f"{key}-c", record["question"], e["text"][:EVIDENCE_CHARS], "conflict",
                                  (e["answer"],), (record["answer"],)))
    return items


def ramdocs_items(path: Path) -> list[EvalItem]:
    items = []
    for index, record in enumerate(_jsonl(path)):
        docs = record["documents"]
        correct = next((d for d in docs if d["type"] == "correct"), None)
        misinfo = next((d for d in docs if d["type"] == "misinfo"), None)
        if correct is not None:
            items.append(EvalItem("ramdocs", f"{index}-f", record["question"], correct["text"][:EVIDENCE_CHARS], "faithful",
                                  (correct["answer"],), (correct["answer"],)))
        if misinfo is not None:
            items.append(EvalItem("ramdocs", f"{index}-c", record["question"], misinfo["text"][:EVIDENCE_CHARS], "conflict",
                                  (misinfo["answer"],), tuple(record["gold_answers"])))
    return items


_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")


def _figures(text: str) -> set[str]:
    return set(_FIGURE.findall(text))


def kb_conflicts_items(path: Path) -> list[EvalItem]:
    items = []
    for record in _jsonl(path):
        texts = {a["ref"]: a["body"] for a in record["articles"]}  # figures of the body: titles carry dates
        bodies = {a["ref"]: f'{a["title"]}\n{a["body"]}' for a in record["articles"]}
        for number, conflict in enumerate(record.get("conflicts", [])):
            trusted = conflict.get("correct")
            if not trusted:
                continue
            other = next(ref for ref in conflict["refs"] if ref != trusted)
            only_trusted = sorted(_figures(texts[trusted]) - _figures(texts[other]))
            only_other = sorted(_figures(texts[other]) - _figures(texts[trusted]))
            if not only_trusted or not only_other:
                continue
            key = f"{record['id']}-{number}"
            items.append(EvalItem("kb-conflicts-dev", f"{key}-f", record["question"], bodies[trusted][:EVIDENCE_CHARS],
                                  "faithful", tuple(only_trusted), tuple(only_trusted)))
            items.append(EvalItem("kb-conflicts-dev", f"{key}-c", record["question"], bodies[other][:EVIDENCE_CHARS],
                                  "conflict", tuple(only_other), ()))
    return items


LOADERS = {
    "conflictbank": ("conflictbank/conflictbank.grouped.jsonl", conflictbank_items),
    "ramdocs": ("ramdocs/RAMDocs_test.jsonl", ramdocs_items),
    "kb-conflicts-dev": ("kb-conflicts-dev/dev.jsonl", kb_conflicts_items),
}


def load_items(*, dataset: str, data_dir: Path, limit: int | None, context_chars: int = EVIDENCE_CHARS) -> list[EvalItem]:
    """The first `limit` questions' items (a faithful and a conflict item each, where the data has both), each context
    cut to `context_chars`."""
    relative, loader = LOADERS[dataset]
    items = [dataclasses.replace(item, context=item.context[:context_chars]) for item in loader(data_dir / relative)]
    if limit is None:
        return items
    keys: list[str] = []
    for item in items:
        key = item.id.rsplit("-", 1)[0]
        if key not in keys:
            keys.append(key)
    kept = set(keys[:limit])
    return [item for item in items if item.id.rsplit("-", 1)[0] in kept]


@dataclass
class Prediction:
    text: str
    tokens: int
    seconds: float


def predict(*, method: str, item: EvalItem, mode: Mode, backend: Backend, embed: Embed,
            params: IGDParams = EVAL_PARAMS) -> Prediction:
    if method == "closed_book":
        started = time.perf_counter()
        text, tokens = plain_greedy(backend=backend, prompt=closed_book_prompt(question=item.question),
                                    max_new_tokens=params.max_new_tokens)
        return Prediction(text, tokens, time.perf_counter() - started)
    passage = Passage(ref="context", title="", text=item.context)
    snippet = select_sentences(question=item.question, passages=[passage], embed=embed)
    snippet_text = " ".join(s.text for s in snippet) or item.context
    quality = sum(s.similarity for s in snippet) / len(snippet) if snippet else 0.0
    prompts = build_prompts(question=item.question, context=item.context, snippet=snippet_text, mode=mode, style=SHORT)
    if method == "direct":
        started = time.perf_counter()
        text, tokens = plain_greedy(backend=backend, prompt=prompts.user, max_new_tokens=params.max_new_tokens)
        return Prediction(text, tokens, time.perf_counter() - started)
    result = igd_generate(backend=backend, prompts=prompts, mode=mode, snippet=snippet_text, snippet_quality=quality,
                          params=dataclasses.replace(params, **ABLATIONS[method]))
    return Prediction(result.answer, result.generated_tokens, result.seconds)


@dataclass
class Scores:
    dataset: str
    mode: str
    method: str
    faithful: list[bool] = field(default_factory=list)
    context: list[bool] = field(default_factory=list)
    world: list[bool] = field(default_factory=list)
    recovery: list[bool] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0

    def add(self, item: EvalItem, prediction: Prediction, closed_book: Prediction | None) -> None:
        self.tokens += prediction.tokens
        self.seconds += prediction.seconds
        if item.group == "faithful":
            self.faithful.append(alias_match(prediction.text, list(item.context_answers)))
            return
        self.context.append(alias_match(prediction.text, list(item.context_answers)))
        if item.world_answers:
            right = alias_match(prediction.text, list(item.world_answers))
            self.world.append(right)
            if closed_book is not None and alias_match(closed_book.text, list(item.world_answers)):
                self.recovery.append(right)

    @staticmethod
    def _mean(values: list[bool]) -> float | None:
        return sum(values) / len(values) if values else None

    def row(self) -> dict:
        faithful, context, world = self._mean(self.faithful), self._mean(self.context), self._mean(self.world)
        aligned = context if self.mode == Mode.STRICT.value else world
        parts = [value for value in (faithful, aligned) if value is not None]
        return {
            "dataset": self.dataset, "mode": self.mode, "method": self.method,
            "n_faithful": len(self.faithful), "n_conflict": len(self.context),
            "faithful_acc": faithful, "context_acc": context, "world_acc": world,
            "ia_score": sum(parts) / len(parts) if parts else None,
            "recovery": self._mean(self.recovery), "n_recoverable": len(self.recovery),
            "tokens_per_s": self.tokens / self.seconds if self.seconds > 0 else None,
        }


def format_table(rows: list[dict]) -> str:
    def cell(value, width=8) -> str:
        if value is None:
            return "n/a".rjust(width)
        if isinstance(value, float):
            return f"{value:.3f}".rjust(width)
        return str(value).rjust(width)

    header = (f"{'dataset':<17}{'mode':<7}{'method':<18}{'n_f':>5}{'n_c':>5}{'faithful':>9}{'context':>9}{'world':>9}"
              f"{'IA':>9}{'recover':>9}{'(n)':>5}{'tok/s':>9}")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['dataset']:<17}{r['mode']:<7}{r['method']:<18}{r['n_faithful']:>5}{r['n_conflict']:>5}"
            f"{cell(r['faithful_acc'], 9)}{cell(r['context_acc'], 9)}{cell(r['world_acc'], 9)}{cell(r['ia_score'], 9)}"
            f"{cell(r['recovery'], 9)}{r['n_recoverable']:>5}{cell(r['tokens_per_s'], 9)}"
        )
    return "\n".join(lines)


def summary_figures(rows: list[dict]) -> dict[str, float | None]:
    """igd_ia_gain: IGD's IA minus Direct's, averaged over the dataset × mode cells; igd_tokens_per_s_ratio: IGD's
    tokens/s over plain greedy (Direct) tokens/s, pooled over the run."""
    by_cell = {(r["dataset"], r["mode"], r["method"]): r for r in rows}
    gains = []
    for (dataset, mode, method), r in by_cell.items():
        direct = by_cell.get((dataset, mode, "direct"))
        if method == "igd" and direct and r["ia_score"] is not None and direct["ia_score"] is not None:
            gains.append(r["ia_score"] - direct["ia_score"])
    return {"igd_ia_gain": sum(gains) / len(gains) if gains else None}

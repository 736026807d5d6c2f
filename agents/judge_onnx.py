"""The shipped contradiction judge (agents.judge) on ONNX Runtime: a MiniLM cross-encoder the project
fine-tuned (`manage.py train_judge`), loaded offline from the repository. Callers that read settings
(the detection service, the evaluation CLI) pass the artefact's folder in as a value.

The artefact folder (JUDGE_DIR, default agents/judge_artefact/) holds `model.onnx` (int8 where it agreed
with float on validation, else float), `tokenizer.json`, `calibration.json` and `card.json` (what trained it
and what it scored); DATA_CARD.md there says so in words.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from agents.claims.judged import JudgeSetup
from agents.judge import CachedJudge, Calibration, StatementPair, judge_input

MAX_TOKENS = 128
MODEL_FILE, TOKENIZER_FILE, CALIBRATION_FILE, CARD_FILE = "model.onnx", "tokenizer.json", "calibration.json", "card.json"


class OnnxJudge:
    """score(pairs) -> (n, 4) label probabilities, in agents.judge.LABELS order."""

    def __init__(self, artefact_dir: Path, *, threads: int = 0, model_file: str = MODEL_FILE):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        artefact_dir = Path(artefact_dir)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        # No spinning: ONNX Runtime's threads otherwise busy-wait between operators, which about doubled the CPU
        # of scoring a check's few statement pairs (measured: 86 against 37 ms for one pair, two threads).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(artefact_dir / model_file), options,
                                            providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(artefact_dir / TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.wanted = {i.name for i in self.session.get_inputs()}

    def __call__(self, pairs: Sequence[StatementPair], *, batch_size: int = 32) -> np.ndarray:
        out = np.zeros((len(pairs), 4), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i].text_a) + len(pairs[i].text_b)))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            encodings = self.tokenizer.encode_batch(
                [(judge_input(pairs[i].text_a, pairs[i].heading_a), judge_input(pairs[i].text_b, pairs[i].heading_b))
                 for i in rows])
            feed = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            logits = self.session.run(None, {k: v for k, v in feed.items() if k in self.wanted})[0]
            logits = logits - logits.max(axis=1, keepdims=True)
            probabilities = np.exp(logits)
            out[rows] = probabilities / probabilities.sum(axis=1, keepdims=True)
        return out


def artefact_present(artefact_dir: Path) -> bool:
    return all((Path(artefact_dir) / name).exists() for name in (MODEL_FILE, TOKENIZER_FILE, CALIBRATION_FILE))


def load_calibration(artefact_dir: Path) -> Calibration:
    return Calibration.from_json((Path(artefact_dir) / CALIBRATION_FILE).read_text())


def load_card(artefact_dir: Path) -> dict:
    path = Path(artefact_dir) / CARD_FILE
    return json.loads(path.read_text()) if path.exists() else {}


@functools.lru_cache(maxsize=4)
def _cached_judge(artefact_dir: str) -> tuple[CachedJudge, Calibration]:
    return CachedJudge(OnnxJudge(Path(artefact_dir))), load_calibration(Path(artefact_dir))


def judge_setup(artefact_dir: str | Path | None, *, mode: str) -> JudgeSetup | None:
    """The judge for the claim detector (one model and cache per process and artefact), or None when it is
    switched off (no folder, or mode "rules") or its artefact is missing."""
    if not artefact_dir or mode == "rules" or not artefact_present(Path(artefact_dir)):
        return None
    judge, calibration = _cached_judge(str(Path(artefact_dir).resolve()))
    return JudgeSetup(judge=judge, calibration=calibration, mode=mode)

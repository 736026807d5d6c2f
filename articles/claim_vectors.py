"""The claim-vector cache: the claim detector's encoder in a process, reading first the vectors the index sync
stored per article version (articles.services), computing the others with the index's sentence model."""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from articles.claim_texts import texts_key
from articles.selectors import version_claim_vectors


class StoredFirstEncoder:
    """The claim detector's encoder in this process: the vectors the index sync stored for an article
    version's claims (loaded per turn by `load`), and the index's sentence model only for texts without them
    (a version indexed before claim vectors were stored, or never indexed)."""

    def __init__(self, encode, *, max_entries: int) -> None:
        self.encode = encode
        self.max_entries = max_entries
        self._known: OrderedDict[str, tuple[int, np.ndarray]] = OrderedDict()  # texts key -> (version, vectors)
        self._looked_up: OrderedDict[int, None] = OrderedDict()  # versions fetched already, found or not
        self._lock = threading.Lock()

    def __call__(self, texts) -> np.ndarray:
        key = texts_key(texts)
        with self._lock:
            version_id, vectors = self._known.pop(key, (None, None))  # ClaimVectors keeps them from now on
            if version_id is not None:
                self._looked_up.pop(version_id, None)  # should ClaimVectors drop them, fetch them again
        if vectors is not None and len(vectors) == len(texts):
            return vectors
        return self.encode(list(texts))

    def load(self, *, knowledge_base_id: int, version_ids) -> None:
        """Fetch the stored claim vectors of the versions not looked up yet (one query; none when all were)."""
        with self._lock:
            missing = [v for v in dict.fromkeys(version_ids) if v not in self._looked_up]
        if not missing:
            return
        self.keep(version_claim_vectors(knowledge_base_id=knowledge_base_id, version_ids=missing), looked_up=missing)

    def keep(self, stored: dict[int, tuple[str, np.ndarray]], *, looked_up=()) -> None:
        """Hold stored vectors (version id -> (texts key, vectors)) until the claim detector asks for them."""
        with self._lock:
            for version_id in [*looked_up, *stored]:
                self._looked_up[version_id] = None
            for version_id, (key, vectors) in stored.items():
                self._known[key] = (version_id, vectors)
            while len(self._looked_up) > self.max_entries:
                self._looked_up.popitem(last=False)
            while len(self._known) > self.max_entries:
                self._known.popitem(last=False)

"""Fixtures shared by the claim detector's test modules."""
from __future__ import annotations

import pytest

from agents.claims import ClaimVectors
from articles.embeddings import embed_texts


@pytest.fixture(scope="module")
def vectors():
    """Claims aligned by the index's real sentence model (one vector cache per test module)."""
    return ClaimVectors(embed_texts)

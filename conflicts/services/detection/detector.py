"""The claim detector of this process: its claim vectors (stored ones first, articles.claim_vectors), the claim
findings of retrieval sets it has checked, and its warm-up at worker start."""
from __future__ import annotations

import functools

from django.conf import settings
from django.utils import timezone

from agents.claims import ClaimVectors
from agents.claims.analysis import VECTOR_CACHE_ARTICLES, masked_texts
from agents.detection import ClaimChecks
from agents.judge_onnx import judge_setup
from agents.types import ArticleText
from articles.claim_vectors import StoredFirstEncoder
from articles.embeddings import embed_texts


def claim_texts_of(title: str, body: str, *, year: int | None = None) -> list[str]:
    """The texts the claim detector embeds for an article (its claims, values masked) when checking in
    `year` (this one by default): what the index sync stores vectors of (registered in conflicts.apps)."""
    return masked_texts(title, body, year or timezone.localdate().year)


@functools.cache
def claim_vectors() -> ClaimVectors:
    """Claim vectors for this process: stored at index time per article version, computed with the index's
    sentence model for a text without them, and kept per article text for later turns."""
    return ClaimVectors(StoredFirstEncoder(embed_texts, max_entries=VECTOR_CACHE_ARTICLES))


def claim_checks() -> ClaimChecks:
    """The claim findings of retrieval sets this process has checked (a chatbot's frequent questions
    retrieve the same sets again), over this process's claim vectors (new ones start with none)."""
    return _claim_checks_over(claim_vectors())


@functools.lru_cache(maxsize=1)
def _claim_checks_over(vectors: ClaimVectors) -> ClaimChecks:
    return ClaimChecks(vectors, judge=judge_setup(settings.JUDGE_DIR, mode=settings.JUDGE_MODE))


def claim_detector_warm_up() -> None:
    """Load the sentence model and the value parsers before the first check: a worker calls this at
    start so that no turn's check (bounded by DETECTION_TIMEOUT_S) pays for loading them."""
    from agents.claims import detect_claim_conflicts  # noqa: PLC0415 - the claim parsers load slowly: at warm-up, not at import

    sample = [ArticleText(ref="warm-1", title="Warm-up", body="Open 9 am to 5 pm; a day pass costs €10 (2 hours)."),
              ArticleText(ref="warm-2", title="Warm-up", body="Call +44 20 7946 0018 by 1 March 2026.")]
    detect_claim_conflicts(articles=sample, vectors=claim_vectors())

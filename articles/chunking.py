"""Split an article into retrievable passages along its own structure (paragraphs, FAQ entries)."""
from __future__ import annotations

import re

MAX_CHUNK_CHARS = 900
MIN_CHUNK_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def paragraphs(body: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]


def _split_long(paragraph: str) -> list[str]:
    """A paragraph longer than a chunk is cut at sentence ends, never mid-sentence when avoidable."""
    pieces, current = [], ""
    for sentence in _SENTENCE_END.split(paragraph):
        if current and len(current) + 1 + len(sentence) > MAX_CHUNK_CHARS:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return pieces


def chunk_body(body: str) -> list[str]:
    """Paragraphs, with short neighbours merged so that a chunk carries enough context to embed well."""
    chunks: list[str] = []
    for paragraph in paragraphs(body):
        for piece in _split_long(paragraph) if len(paragraph) > MAX_CHUNK_CHARS else [paragraph]:
            if chunks and len(chunks[-1]) < MIN_CHUNK_CHARS and len(chunks[-1]) + 2 + len(piece) <= MAX_CHUNK_CHARS:
                chunks[-1] = f"{chunks[-1]}\n\n{piece}"
            else:
                chunks.append(piece)
    return chunks

"""Opposite statements about the same predicate (placeholder, filled below)."""
from __future__ import annotations
def extract_stances(article, *, now):
    return []
def best_polarity_conflict(a, b):
    return None
class Stance: pass

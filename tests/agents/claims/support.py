"""Helpers shared by the claim detector's test modules: two articles, their findings, one analysed claim."""
from __future__ import annotations

import datetime as dt

from agents.claims import _scope, detect_claim_conflicts
from agents.claims.analysis import analyse_text
from agents.claims.value_extraction import extract_values
from agents.types import ArticleText

__all__ = ["NOW", "claim", "detect_claim_conflicts", "found", "only", "pair"]

NOW = dt.date(2026, 6, 1)


def pair(first: str, second: str, *, first_title="Visiting us", second_title="Help centre",
         first_date=dt.date(2026, 1, 10), second_date=dt.date(2026, 4, 2)) -> list[ArticleText]:
    return [ArticleText(ref="kb-1", title=first_title, body=first, updated_at=first_date),
            ArticleText(ref="kb-2", title=second_title, body=second, updated_at=second_date)]


def found(articles, vectors, now=NOW):
    return detect_claim_conflicts(articles=articles, now=now, vectors=vectors).findings


def claim(text, title="Notes"):
    """The first claim of a one-text article, and its scope as the detector reads it."""
    facts = analyse_text(title, text, 2026)[0]
    return facts, _scope(facts, known=frozenset(), now=NOW)


def only(text: str, kind: str):
    """The one value of this kind in the text (the test fails if there is not exactly one)."""
    values = [v for v in extract_values(text, year=2026) if v.kind == kind]
    assert len(values) == 1, values
    return values[0]

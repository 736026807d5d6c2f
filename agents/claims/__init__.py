"""Deterministic, claim-based conflict detection (no LLM).

    from agents.claims import detect_claim_conflicts
    findings = detect_claim_conflicts(articles=articles, now=date.today())

Every pair of articles is compared: typed facts (money, durations, ages, dates, contacts, opening hours)
that share an attribute and qualifiers but cannot both hold, and opposite statements about the same
predicate (refundable / non-refundable, online / not online, ...).
"""
from __future__ import annotations

import datetime as dt
from itertools import combinations

from agents.types import ArticleText, ConflictFinding, pair_key

from .compare import best_conflict
from .facts import Fact, extract_facts
from .qualifiers import proper_words_of
from .scope import article_vocabulary
from .polarity import Stance, best_polarity_conflict, extract_stances

__all__ = ["detect_claim_conflicts"]


def _explain(fa: Fact | Stance, fb: Fact | Stance, what: str) -> str:
    about = ", ".join(sorted(fa.topic & fb.topic)[:3]) or fa.ftype
    return f"{fa.ref} and {fb.ref} disagree about {about}: {what}."


def _finding(fa, fb, what: str) -> ConflictFinding:
    refs = pair_key(fa.ref, fb.ref)
    return ConflictFinding(refs=refs, type=fa.ftype, explanation=_explain(fa, fb, what),
                           snippets={fa.ref: fa.sentence.text, fb.ref: fb.sentence.text})


def detect_claim_conflicts(*, articles: list[ArticleText], now: dt.date | None = None) -> list[ConflictFinding]:
    """One finding per pair of articles whose claims contradict; sorted by refs for a stable order."""
    today = now or dt.date.today()
    unique = {a.ref: a for a in articles}
    known = frozenset(w for a in unique.values() for w in proper_words_of(a.title + "\n" + a.body))
    facts = {ref: extract_facts(a, now=today, known_names=known) for ref, a in unique.items()}
    stances = {ref: extract_stances(a, now=today, known_names=known) for ref, a in unique.items()}
    vocab = {ref: article_vocabulary(a.title, a.body) for ref, a in unique.items()}
    findings = []
    for ref_a, ref_b in combinations(sorted(unique), 2):
        hit = best_conflict(facts[ref_a], facts[ref_b], vocab_a=vocab[ref_a], vocab_b=vocab[ref_b])
        if hit is None:
            hit = best_polarity_conflict(stances[ref_a], stances[ref_b])
        if hit is not None:
            findings.append(_finding(*hit))
    return sorted(findings, key=lambda f: f.refs)

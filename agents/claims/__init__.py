"""Deterministic conflict detection (no LLM): align claims by meaning, then compare what they say.

    from agents.claims import detect_claim_conflicts, ClaimVectors
    result = detect_claim_conflicts(articles=articles, now=today, vectors=ClaimVectors(encoder))

Each article is split into claims (sentences, list items, table rows) whose values are masked; claims of
two articles are aligned by the cosine of their masked sentence vectors (the index's sentence model,
passed in as a callable: `agents` imports no model). Aligned claims are compared on typed values (units
and formats converted), polarity and modality, channels and near-copy differences; claims scoped to
different audiences, days, tiers or names, explicitly past statements and changes announced for later
never conflict. Each finding has a confidence; pairs with no aligned claim at all are "unrelated".
"""
from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from agents.judge import StatementPair
from agents.types import ArticleText, ConflictFinding, pair_key

from .analysis import VECTOR_CACHE_ARTICLES, ClaimFacts, ClaimVectors, Encoder, analyse_text
from .article_passes import same_subject_prices, transposed_contact
from .compare import compare_claims
from .contradiction import Contradiction
from .judged import (
    TOP_ALIGNED,
    JudgeSetup,
    judge_pairs,
    judged_contradiction,
    statement_pair,
    value_difference,
    vetoed,
)
from .scope import PageScope, Scope, claim_scope, page_scope, proper_names
from .value_extraction import extract_values
from .values import DATE

__all__ = ["ClaimDetection", "ClaimVectors", "Encoder", "JudgeSetup", "aligned_statement_pairs", "detect_claim_conflicts",
           "REPORT_MIN_CONFIDENCE"]

ALIGN_FLOOR = 0.5  # below this two claims are about different things
# A pair with no claims this close is about different things altogether: no aligned claim at all. (0.55 kept 92 of
# the 123 conflicting pairs of the broad corpus's dev half from the LLM; at the alignment floor 112 reach it.)
RELATED_FLOOR = ALIGN_FLOOR
REPORT_MIN_CONFIDENCE = 0.5
MAX_ALIGNED_PER_PAIR = 40
BUSINESS_NAME_SHARE = 1.5  # a name in more than two thirds of the articles is the business's own, not a scope


@dataclass
class ClaimDetection:
    findings: list[ConflictFinding] = field(default_factory=list)
    # Every pair compared, with the similarity of its closest claims: what decides "unrelated".
    pair_similarity: dict[tuple[str, str], float] = field(default_factory=dict)
    aligned_by_meaning: bool = False  # a sentence model aligned the claims (not the bag-of-words fallback)
    # Pairs the judge settled offline: every aligned statement pair confidently different scope or unrelated.
    settled_apart: set[tuple[str, str]] = field(default_factory=set)

    def unrelated_pairs(self) -> set[tuple[str, str]]:
        """Pairs whose closest claims are still about different things (only a sentence model can say), and
        pairs the judge settled as apart: neither needs the LLM."""
        if not self.aligned_by_meaning:
            return set(self.settled_apart)
        return {key for key, similarity in self.pair_similarity.items() if similarity < RELATED_FLOOR} | self.settled_apart


SEE_RE = re.compile(r"\bsee ", re.I)  # where a body may refer to another page by its title


@functools.lru_cache(maxsize=VECTOR_CACHE_ARTICLES)
def _lowercase_words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\b[a-z][a-z'\-]+", text))


def _known_names(articles: list[ArticleText]) -> frozenset[str]:
    """The names that can scope a claim (a plan, a branch): capitalised inside a sentence somewhere in the
    set, never written in lower case (so not "Terms"), and not used by most (over two thirds) of the articles
    (the business's own)."""
    counts: dict[str, int] = {}
    lowercase: set[str] = set()
    capitalised_in_bodies: set[str] = set()
    titles = sorted({a.title.strip() for a in articles if len(a.title.split()) > 1}, key=len, reverse=True)
    for article in articles:
        lowercase.update(_lowercase_words(article.title + ". " + article.body))
        body = article.body
        if SEE_RE.search(body):
            for title in titles:  # "(see Booking and cancelling)" refers to a page: its capital starts a title, no name
                body = re.sub(rf"(?<=\bsee )[\"\u201c']?{re.escape(title)}", lambda m: " " * len(m.group()), body, flags=re.I)
        capitalised_in_bodies.update(proper_names(body))
        # A title word counts when a body uses it too ("Elmstead branch" and "… at Elmstead …").
        title_names = proper_names(article.title, first_words=True) & capitalised_in_bodies
        for name in proper_names(body) | title_names:
            counts[name] = counts.get(name, 0) + 1
    return frozenset(name for name, n in counts.items()
                     if not (n * BUSINESS_NAME_SHARE > len(articles) and n >= 2) and name.lower() not in lowercase)


def _dates(values) -> list[dt.date]:
    out = []
    for value in values:
        if value.kind == DATE and value.key[0]:
            out.append(dt.date(value.key[0], value.key[1] or 1, value.key[2] or 1))
    return out


# A day given as a deadline ("documents by 31 December", "no later than 30 November") is the claim's value,
# not the day it is said for.
DEADLINE_BEFORE_RE = re.compile(r"\b(?:by|no later than|on or before|deadline(?: is| of)?|due(?: on| by)?)\s+(?:the\s+)?$", re.I)


def _calendar_days(values, text: str) -> list[str]:
    """The particular days a claim is said for ("on 24 December we close at 14:00"): they scope it like a season."""
    return [f"{value.key[1]:02d}-{value.key[2]:02d}" for value in values
            if value.kind == DATE and value.key[1] and value.key[2]
            and not DEADLINE_BEFORE_RE.search(text[max(0, value.start - 20):value.start])]


@functools.lru_cache(maxsize=4096)
def _context_dates(context: str, year: int) -> list[dt.date]:
    return _dates(extract_values(context, year=year))


def _scope(facts: ClaimFacts, *, known: frozenset[str], now: dt.date, page: PageScope = PageScope()) -> Scope:
    # A table cell's row label is what the cell is of ("Off-Peak | weekdays 09:00-16:00"): its own words, not a heading.
    text = f"{facts.claim.label}: {facts.claim.text}" if facts.claim.label else facts.claim.text
    return claim_scope(text, facts.claim.context, known_names=known, dates=_dates(facts.values),
                       context_dates=_context_dates(facts.claim.context, now.year),
                       calendar_days=_calendar_days(facts.values, facts.claim.text), now=now, page=page)


def _newer_note(a: ArticleText, b: ArticleText) -> str:
    if a.updated_at and b.updated_at and a.updated_at != b.updated_at:
        newer = a if a.updated_at > b.updated_at else b
        return f" \u201c{newer.title or newer.ref}\u201d is the newer of the two (updated {newer.updated_at.isoformat()})."
    if a.updated_at and a.updated_at == b.updated_at:
        return f" Both were updated on {a.updated_at.isoformat()}."
    return ""


def explain(contradiction: Contradiction, article_a: ArticleText, article_b: ArticleText) -> str:
    """A sentence a business user can read: both titles, what each says, which is newer."""
    def quoted(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= 140 else text[:137] + "\u2026"

    what = {"price": "the price", "hours": "the opening hours", "contact": "the contact details",
            "date": "the date", "eligibility": "who is eligible", "quantity": "the amount",
            "policy": "the rule", "procedure": "how or where it is done"}.get(contradiction.type, "this")
    values = value_difference(contradiction.a, contradiction.b)
    return (f"\u201c{article_a.title or article_a.ref}\u201d and \u201c{article_b.title or article_b.ref}\u201d "
            f"disagree about {what}" + (f" ({values})" if values else "") + ": one says "
            f"\u201c{quoted(contradiction.said_a)}\u201d, the other \u201c{quoted(contradiction.said_b)}\u201d."
            + _newer_note(article_a, article_b))


def _aligned(matrix_a: np.ndarray, matrix_b: np.ndarray):
    """The claim similarities of two articles and their aligned claim pairs, closest first: (similarity, rows,
    cols, order), the k-th aligned pair being (rows[order[k]], cols[order[k]])."""
    similarity = matrix_a @ matrix_b.T
    rows, cols = np.nonzero(similarity >= ALIGN_FLOOR)
    return similarity, rows, cols, np.argsort(-similarity[rows, cols])[:MAX_ALIGNED_PER_PAIR]


def aligned_statement_pairs(*, articles: list[ArticleText], now: dt.date, vectors: ClaimVectors,
                            per_pair: int = TOP_ALIGNED) -> dict[tuple[str, str], list[StatementPair]]:
    """For every pair of articles, the statement pairs the judge reads for it (the best-aligned first), as it
    reads them: what a judge's training data must look like."""
    unique = {a.ref: a for a in articles}
    facts = {ref: analyse_text(a.title, a.body, now.year) for ref, a in unique.items()}
    matrices = {ref: vectors.vectors(f) for ref, f in facts.items()}
    out = {}
    for ref_a, ref_b in combinations(sorted(unique), 2):
        if facts[ref_a] and facts[ref_b]:
            _, rows, cols, order = _aligned(matrices[ref_a], matrices[ref_b])
            out[pair_key(ref_a, ref_b)] = [statement_pair(facts[ref_a][int(rows[k])], facts[ref_b][int(cols[k])])
                                           for k in order[:per_pair]]
    return out


def detect_claim_conflicts(*, articles: list[ArticleText], now: dt.date | None = None,
                           vectors: ClaimVectors | None = None, encoder: Encoder | None = None,
                           min_confidence: float = REPORT_MIN_CONFIDENCE,
                           judge: JudgeSetup | None = None) -> ClaimDetection:
    """Findings (one per conflicting pair, sorted by refs, each with a confidence) and pair similarities.
    With a `judge` (agents.claims.judged) the learned judge reads the statements by its mode: in `veto` only
    those a rule flagged; in `judge` and `judge+rules` the best-aligned statement pairs of every article pair,
    and pairs whose every aligned statement pair it confidently calls apart are settled."""
    today = now or dt.date.today()
    store = vectors or ClaimVectors(encoder)
    unique = {a.ref: a for a in articles}
    known = _known_names(list(unique.values()))
    facts = {ref: analyse_text(a.title, a.body, today.year) for ref, a in unique.items()}
    matrices = {ref: store.vectors(f) for ref, f in facts.items()}
    pages = {ref: page_scope((f.claim.text, _dates(f.values)) for f in claim_facts) for ref, claim_facts in facts.items()}
    scopes = {ref: [_scope(f, known=known, now=today, page=pages[ref]) for f in claim_facts]
              for ref, claim_facts in facts.items()}
    result = ClaimDetection(aligned_by_meaning=store.encoder is not None)
    rule_findings: dict[tuple[str, str], Contradiction | None] = {}
    fallbacks: dict[tuple[str, str], list[Contradiction]] = {}
    aligned: dict[tuple[str, str], list] = {}
    for ref_a, ref_b in combinations(sorted(unique), 2):
        key = pair_key(ref_a, ref_b)
        if not facts[ref_a] or not facts[ref_b]:
            result.pair_similarity[key] = 0.0
            continue
        similarity, rows, cols, order = _aligned(matrices[ref_a], matrices[ref_b])
        result.pair_similarity[key] = float(similarity.max())
        if judge is not None and judge.mode in ("judge", "judge+rules"):  # what the judge reads, best first
            aligned[key] = [(facts[ref_a][int(rows[k])], facts[ref_b][int(cols[k])]) for k in order]
        if judge is not None and judge.mode == "judge":
            continue  # the judge alone decides: the rules are not run
        found = [transposed_contact(facts[ref_a], facts[ref_b])]
        for index in order:
            i, j = int(rows[index]), int(cols[index])
            found.append(compare_claims(facts[ref_a][i], facts[ref_b][j], similarity=float(similarity[i, j]),
                                        scope_a=scopes[ref_a][i], scope_b=scopes[ref_b][j]))
        # Strongest first (a stable sort: of equals, the first found); the rest is what a veto falls back on.
        ranked = sorted((f for f in found if f is not None), key=lambda f: -f.confidence)
        best, fallbacks[key] = (ranked[0], ranked[1:]) if ranked else (None, [])
        rule_findings[key] = best or same_subject_prices(facts[ref_a], facts[ref_b], similarity, scopes[ref_a], scopes[ref_b])
    flagged = [key for key, rule in rule_findings.items() if rule is not None]
    if judge is not None and judge.mode == "veto":
        # Findings below min_confidence are left out below whatever the judge says: it reads only the others.
        reported = [key for key in flagged if rule_findings[key].confidence >= min_confidence]
        for key, drop in zip(reported, vetoed(judge, [rule_findings[key] for key in reported])):
            if drop:  # the judge vetoes statements, not articles: the pair's next finding it does not veto stands
                others = [other for other in fallbacks[key] if other.confidence >= min_confidence]
                rule_findings[key] = next((other for other, no in zip(others, vetoed(judge, others)) if not no), None)
    elif judge is not None and judge.mode != "rules":
        judged = {key: items for key, items in aligned.items() if items}
        judgements = judge_pairs(judge, judged, also=[rule_findings[key] for key in flagged if key in judged])
        for key, judgement in judgements.items():
            rule_findings[key] = judged_contradiction(judge, judgement, rule_findings.get(key))
            if rule_findings[key] is None and judgement.all_apart >= judge.calibration.settle_score:
                result.settled_apart.add(key)
    for key, best in sorted(rule_findings.items()):
        if best is not None and best.confidence >= min_confidence:
            ref_a, ref_b = key
            a, b = unique[ref_a], unique[ref_b]
            result.findings.append(ConflictFinding(
                refs=key, type=best.type, explanation=explain(best, a, b),
                snippets={ref_a: best.a.claim.text, ref_b: best.b.claim.text},
                confidence=round(best.confidence, 3), detector="claims"))
    result.findings.sort(key=lambda f: f.refs)
    return result

"""What the LLM is shown of a pair of articles: the claims of each that align with a claim of the other.

Two articles can only contradict each other where they talk about the same thing, so a pair sent to the
LLM is shown as its aligned claims (by the claim detector's masked sentence vectors, at SHOW_FLOOR), not
whole articles.
A claim that both articles state word for word is agreed: it is left out and aligns with nothing (a pair
whose only close claims are shared sentences, boilerplate or a copied paragraph, has nothing to
contradict, and its "no conflict" is settled without the LLM).

Plain data: the claim vectors come in as the claim detector's ClaimVectors (the index's sentence model,
or vectors stored per article version), so `agents` imports no models.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.claims import ALIGN_FLOOR, ClaimVectors
from agents.claims.analysis import analyse_text
from agents.types import ArticleText, ClaimsShown

# The LLM is there for the contradictions the claim detector cannot read, often phrased quite differently
# ("activate it in the app" against "an engineer switches it on at your home"), so it is shown claims about
# roughly the same thing: a wider net than the claim detector's own comparison (ALIGN_FLOOR).
SHOW_FLOOR = ALIGN_FLOOR - 0.1
MAX_CLAIMS_SHOWN = 8  # per article and pair: the closest ones (bounds what a long article costs)
UNALIGNED = -1.0


@dataclass(frozen=True)
class PairExcerpt:
    """The aligned claims of a pair (ref -> claims shown) and how close its closest differing claims are
    (UNALIGNED when every claim of one article is also, word for word, in the other)."""

    claims: dict[str, ClaimsShown]
    similarity: float

    @property
    def related(self) -> bool:
        """Some differing claims are about roughly the same thing: there is something for the LLM to judge."""
        return self.similarity >= SHOW_FLOOR


def _same_words(text: str) -> str:
    return " ".join(text.lower().split())


def _context(facts, title: str) -> str:
    claim = facts.claim
    context = claim.question or claim.context
    if context.startswith(title):
        context = context[len(title):].lstrip(" \u2014")
    return context


def pair_excerpt(a: ArticleText, b: ArticleText, *, vectors: ClaimVectors, year: int,
                 must_show: dict[str, str] | None = None) -> PairExcerpt:
    """The claims of `a` and `b` that align (cosine >= SHOW_FLOOR) with a differing claim of the other, the
    closest MAX_CLAIMS_SHOWN of each, and any claim whose text is `must_show[ref]` (a finding's snippet)."""
    facts_a, facts_b = analyse_text(a.title, a.body, year), analyse_text(b.title, b.body, year)
    if not facts_a or not facts_b:
        return PairExcerpt(claims={a.ref: {}, b.ref: {}}, similarity=UNALIGNED)
    similarity = vectors.vectors(facts_a) @ vectors.vectors(facts_b).T
    # A claim the other article also states word for word is agreed: it is neither shown nor aligned.
    words_a, words_b = [_same_words(f.claim.text) for f in facts_a], [_same_words(f.claim.text) for f in facts_b]
    similarity[[i for i, w in enumerate(words_a) if w in set(words_b)], :] = UNALIGNED
    similarity[:, [j for j, w in enumerate(words_b) if w in set(words_a)]] = UNALIGNED
    claims = {}
    for article, facts, best in ((a, facts_a, similarity.max(axis=1)), (b, facts_b, similarity.max(axis=0))):
        chosen = {int(i) for i in np.argsort(-best, kind="stable")[:MAX_CLAIMS_SHOWN] if best[i] >= SHOW_FLOOR}
        snippet = (must_show or {}).get(article.ref)
        chosen |= {i for i, f in enumerate(facts) if snippet is not None and f.claim.text == snippet}
        claims[article.ref] = {facts[i].claim.index: (_context(facts[i], article.title), facts[i].claim.text)
                               for i in sorted(chosen)}
    return PairExcerpt(claims=claims, similarity=float(similarity.max()))

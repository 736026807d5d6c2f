"""What the LLM is shown of a pair of articles: the claims of each that align with a claim of the other.

Two articles can only contradict each other where they talk about the same thing, so a pair sent to the
LLM is shown as its aligned claims (by the claim detector's masked sentence vectors, at SHOW_FLOOR), not
whole articles.
A claim that both articles state word for word is agreed: it is left out and aligns with nothing (a pair
whose only close claims are shared sentences, boilerplate or a copied paragraph, has nothing to
contradict, and its "no conflict" is settled without the LLM).

Each aligned claim pair shown has a key (`claim_pair_key`: both claims with their titles and headings).
When the LLM judges a pair "no conflict", every claim pair it was shown for it is judged consistent; a later
pair of other articles is then shown only the claim pairs not judged yet (`settled`), and a pair whose aligned
claim pairs were all judged before is settled without a call. The same two statements are compared once,
in every pair of articles that shows them under the same titles and headings (an edited article keeps the
verdicts of the sentences it did not change; copies of a page share them).

Plain data: the claim vectors come in as the claim detector's ClaimVectors (the index's sentence model,
or vectors stored per article version), so `agents` imports no models.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from agents.claims import ALIGN_FLOOR, ClaimVectors
from agents.claims.analysis import analyse_text
from agents.claims.near_copy import own_page_siblings
from agents.types import ArticleText, ClaimPairsShown, ClaimsShown

# The LLM is there for the contradictions the claim detector cannot read, often phrased quite differently
# ("activate it in the app" against "an engineer switches it on at your home"), so it is shown claims about
# roughly the same thing: a wider net than the claim detector's own comparison (ALIGN_FLOOR).
SHOW_FLOOR = ALIGN_FLOOR - 0.1
MAX_CLAIMS_SHOWN = 8  # per article and pair: the closest ones (bounds what a long article costs)
UNALIGNED = -1.0


@dataclass(frozen=True)
class PairExcerpt:
    """The aligned claims of a pair (ref -> claims shown), how close its closest differing claims not judged
    before are (UNALIGNED when every claim of one article is also, word for word, in the other, or when every
    aligned claim pair was judged consistent before), and the keys of the aligned claim pairs shown: what a
    "no conflict" verdict on the pair says is consistent."""

    claims: dict[str, ClaimsShown]
    similarity: float
    claim_pairs: ClaimPairsShown = field(default_factory=dict)

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


def claim_pair_key(first: tuple[str, ...], second: tuple[str, ...]) -> str:
    """The key of two claims, each (article title, heading, text) as the LLM is shown them: the same in either
    order, blind to spacing and case. The title counts: it can be all that tells two products or years apart
    ("Lite plan" / "Max plan"), and a "no conflict" said for that reason holds for those pages only."""
    parts = sorted("\x1f".join(_same_words(part) for part in claim) for claim in (first, second))
    return hashlib.blake2b("\x1e".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class PairAlignment:
    """Two articles' claims and the cosine of every claim of one with every claim of the other; claims both
    state word for word are agreed and align with nothing. `candidate_keys` are the claim pairs an excerpt
    could show: what to ask about before `excerpt` (plan_detection asks once for all of a turn's pairs)."""

    def __init__(self, a: ArticleText, b: ArticleText, *, vectors: ClaimVectors, year: int) -> None:
        self.a, self.b = a, b
        self._keys: dict[tuple[int, int], str] = {}
        self.facts_a, self.facts_b = analyse_text(a.title, a.body, year), analyse_text(b.title, b.body, year)
        if not self.facts_a or not self.facts_b:
            self.similarity = np.full((len(self.facts_a), len(self.facts_b)), UNALIGNED)
            return
        similarity = vectors.vectors(self.facts_a) @ vectors.vectors(self.facts_b).T
        # A claim the other article also states word for word is agreed: it is neither shown nor aligned.
        words_a = [_same_words(f.claim.text) for f in self.facts_a]
        words_b = [_same_words(f.claim.text) for f in self.facts_b]
        similarity[[i for i, w in enumerate(words_a) if w in set(words_b)], :] = UNALIGNED
        similarity[:, [j for j, w in enumerate(words_b) if w in set(words_a)]] = UNALIGNED
        # One template sentence on two products' own pages says each product's own thing: nothing to compare.
        for i, j in zip(*np.nonzero(similarity >= SHOW_FLOOR)):
            if own_page_siblings(self.facts_a[i], self.facts_b[j]):
                similarity[i, j] = UNALIGNED
        self.similarity = similarity

    @property
    def related(self) -> bool:
        """Some differing claims are about roughly the same thing, whether judged before or not."""
        return bool(self.similarity.size) and float(self.similarity.max()) >= SHOW_FLOOR

    def _shown(self, article: ArticleText, facts, i: int) -> tuple[str, str]:
        return _context(facts[i], article.title), facts[i].claim.text

    def _key(self, i: int, j: int) -> str:
        if (i, j) not in self._keys:
            self._keys[i, j] = claim_pair_key((self.a.title, *self._shown(self.a, self.facts_a, i)),
                                              (self.b.title, *self._shown(self.b, self.facts_b, j)))
        return self._keys[i, j]

    def _aligned(self) -> list[tuple[int, int]]:
        return [(int(i), int(j)) for i, j in zip(*np.nonzero(self.similarity >= SHOW_FLOOR))]

    def candidate_keys(self) -> set[str]:
        return {self._key(i, j) for i, j in self._aligned()}

    def excerpt(self, *, settled: Collection[str] = (), must_show: dict[str, str] | None = None) -> PairExcerpt:
        """The claims of each article that align (cosine >= SHOW_FLOOR) with a differing claim of the other in
        a claim pair not in `settled`, the closest MAX_CLAIMS_SHOWN of each, and any claim whose text is
        `must_show[ref]` (a finding's snippet)."""
        if not self.facts_a or not self.facts_b:
            return PairExcerpt(claims={self.a.ref: {}, self.b.ref: {}}, similarity=UNALIGNED)
        similarity = self.similarity.copy()
        for i, j in self._aligned() if settled else ():
            if self._key(i, j) in settled:
                similarity[i, j] = UNALIGNED
        claims, chosen_by_side = {}, []
        for article, facts, best in ((self.a, self.facts_a, similarity.max(axis=1)),
                                     (self.b, self.facts_b, similarity.max(axis=0))):
            chosen = {int(i) for i in np.argsort(-best, kind="stable")[:MAX_CLAIMS_SHOWN] if best[i] >= SHOW_FLOOR}
            snippet = (must_show or {}).get(article.ref)
            chosen |= {i for i, f in enumerate(facts) if snippet is not None and f.claim.text == snippet}
            claims[article.ref] = {facts[i].claim.index: self._shown(article, facts, i) for i in sorted(chosen)}
            chosen_by_side.append(chosen)
        shown_pairs = {self._key(i, j): ((self.a.ref, self.facts_a[i].claim.text), (self.b.ref, self.facts_b[j].claim.text))
                       for i, j in self._aligned()
                       if similarity[i, j] >= SHOW_FLOOR and i in chosen_by_side[0] and j in chosen_by_side[1]}
        return PairExcerpt(claims=claims, similarity=float(similarity.max()), claim_pairs=shown_pairs)


def pair_excerpt(a: ArticleText, b: ArticleText, *, vectors: ClaimVectors, year: int,
                 must_show: dict[str, str] | None = None, settled: Collection[str] = ()) -> PairExcerpt:
    """The excerpt of one pair (PairAlignment.excerpt)."""
    return PairAlignment(a, b, vectors=vectors, year=year).excerpt(settled=settled, must_show=must_show)

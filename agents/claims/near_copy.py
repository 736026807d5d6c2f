"""Near-copies: the same sentence on two pages differing in a number, a name or a denial; template lines on
each product's own page are siblings, not copies."""
from __future__ import annotations

import difflib
import functools
import re
from collections import Counter

from .analysis import ClaimFacts
from .stance import NEGATION_RE
from .subject import Relation, phrase_stems, relation, subject_of

# Alignment thresholds (cosine of masked claims): tuned on the development half of the broad corpus.


NEAR_COPY_RATIO = 0.8
NEAR_COPY_MAX_WORDS = 80
NAME_SWAP_CONFIDENCE = 0.8
TRIM = ",.;:()!?"


def _subject_at(facts: ClaimFacts, words: str) -> frozenset[str] | None:
    """What the number in `words` is said of: its parsed value's subject, else its clause's."""
    start = max(0, facts.claim.text.find(words))
    end = start + len(words)
    for value, subject in zip(facts.values, facts.subjects):
        if value.start < end and start < value.end:
            return subject
    return subject_of(facts.claim.text, start)


def _copied_number_differs(a: ClaimFacts, left: str, b: ClaimFacts, right: str) -> bool:
    """Not when the numbers are said of different things, or the articles are pages about different things
    built from one template ("Route A: 10 sailings a day" / "Route B: 8 sailings a day")."""
    subjects = (_subject_at(a, left), _subject_at(b, right))
    if relation(*subjects) is Relation.DIFFERENT:
        return False
    titles = (phrase_stems(f.claim.context.split(" \u2014 ", 1)[0]) for f in (a, b))
    return relation(*titles) is not Relation.DIFFERENT


def template_siblings(a: ClaimFacts, b: ClaimFacts) -> bool:
    """One template line on two sibling pages ("Front desk: <number>" on each branch's page): the claims read
    the same once their values are masked, and the page titles name one kind of thing with different
    modifiers ("North Street branch" / "Harbour Road branch"), so each value belongs to its own page."""
    if " ".join(a.masked.lower().split()) != " ".join(b.masked.lower().split()):
        return False
    title_a, title_b = (phrase_stems(f.claim.context.split(" \u2014 ", 1)[0]) for f in (a, b))
    return bool(title_a & title_b) and relation(title_a, title_b) is Relation.DIFFERENT


def _each_names_its_own_page(a: ClaimFacts, name_a: str, b: ClaimFacts, name_b: str) -> bool:
    def in_title(facts: ClaimFacts, name: str) -> bool:
        title = facts.claim.context.split(" \u2014 ", 1)[0].lower()
        return all(word in title for word in re.findall(r"[a-z0-9']+", name.lower()))
    return in_title(a, name_a) and in_title(b, name_b)


@functools.lru_cache(maxsize=16384)
def _word_counts(text: str) -> Counter:
    """The claim's words, lower-cased, with their counts (treat as read-only: it is cached)."""
    return Counter(w.lower() for w in text.split())


def near_copy_difference(a: ClaimFacts, b: ClaimFacts) -> tuple[str, str, str, bool] | None:
    """Two near-identical claims: (type, what one says, what the other says, only a name differs) when the
    words that differ are a denial, a name or a number. Only a name swap's finding reads the type and words; for
    the rest, that the claims are copies lets the values family compare them."""
    words_a, words_b = a.claim.text.split(), b.claim.text.split()
    if max(len(words_a), len(words_b)) > NEAR_COPY_MAX_WORDS:
        return None  # the diff is quadratic; a near-copy is a sentence, not a page
    if len(words_a) < 5:
        return None
    # The quick ratios (SequenceMatcher's real_quick_ratio and quick_ratio, computed alike) are upper bounds of
    # ratio(): most aligned claims are no copies, and are told so before a matcher is built.
    total = len(words_a) + len(words_b)
    if 2.0 * min(len(words_a), len(words_b)) / total < NEAR_COPY_RATIO:
        return None
    if 2.0 * sum((_word_counts(a.claim.text) & _word_counts(b.claim.text)).values()) / total < NEAR_COPY_RATIO:
        return None
    matcher = difflib.SequenceMatcher(None, [w.lower() for w in words_a], [w.lower() for w in words_b], autojunk=False)
    if matcher.ratio() < NEAR_COPY_RATIO:
        return None
    # A capital that merely starts the sentence is no name: the first word never counts as one.
    differences = [(op, " ".join(words_a[i1:i2]), " ".join(words_b[j1:j2]))
                   for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]
    starts_sentence = any(op != "equal" and (i1 == 0 or j1 == 0) for op, i1, _, j1, _ in matcher.get_opcodes())
    names_only = bool(differences) and not starts_sentence and all(op == "replace" and re.match(r"[A-Z]", left) and re.match(r"[A-Z]", right)
                                          for op, left, right in differences)
    for op, left, right in differences:
        # A denial that differs counts when the claims' polarity differs ("cannot … without" = "must … with").
        if bool(NEGATION_RE.search(left)) != bool(NEGATION_RE.search(right)) and a.negative != b.negative:
            return "policy", left or "(nothing)", right or "(nothing)", False
        if op == "replace" and not starts_sentence and re.match(r"[A-Z]", left) and re.match(r"[A-Z]", right):
            return "other", left, right, names_only
        if (op == "replace" and re.search(r"\d", left) and re.search(r"\d", right)
                and left.strip(TRIM) != right.strip(TRIM) and _copied_number_differs(a, left, b, right)):
            # A number the copy changed, in whatever format the value parsers may not read.
            return "quantity", left.strip(TRIM), right.strip(TRIM), False
    return None


def own_page_siblings(a: ClaimFacts, b: ClaimFacts) -> bool:
    """One template sentence on each product's own page ("Our Lite team …" / "Our Max team …"): the claims
    differ only in a name, and each names the page it stands on. Each says something of its own subject."""
    return own_page_names(a, b, near_copy_difference(a, b))


def own_page_names(a: ClaimFacts, b: ClaimFacts, near_copy: tuple[str, str, str, bool] | None) -> bool:
    return bool(near_copy and near_copy[3] and _each_names_its_own_page(a, near_copy[1], b, near_copy[2]))

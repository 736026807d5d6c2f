"""One article, analysed once per text: its claims, their typed values, polarity, channels, and the
masked sentence used to align claims by meaning ("€149 per month" and "€165 a month" both read
"amount per month")."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .scope import spell_out_days
from .split import LEADER_SPAN_RE, Claim, split_claims
from .stance import (
    channel_stances,
    channels,
    denied_of,
    denied_predicates,
    denied_words,
    is_negative,
    modality,
    strip_negation,
)
from .subject import label_subject, named_mentions, resolved, statement_subject, subject_of
from .value_extraction import extract_values
from .values import (
    AGE,
    CLOCK,
    COUNT,
    DATE,
    EMAIL,
    MONEY,
    PERCENT,
    PHONE,
    QUANTITY,
    UNLIMITED,
    URL,
    Value,
)
from .words import STOPWORDS

# An encoder turns texts into unit-length vectors (the index's sentence model, passed in as a callable).
Encoder = Callable[[Sequence[str]], np.ndarray]

PLACEHOLDERS = {MONEY: "an amount", PERCENT: "a percentage", CLOCK: "a time", DATE: "a date", PHONE: "a number",
                EMAIL: "an address", URL: "a website", AGE: "an age", QUANTITY: "a length of", COUNT: "several", UNLIMITED: "an amount of"}
SHORT_CLAIM_WORDS = 7
YES_NO_RE = re.compile(r"^\s*(yes|no)\b", re.I)
DENIAL_FILLER = frozenset({"be", "is", "are", "the", "a", "an"})
# Words a denial passes on its way to what it denies ("don't need to sign", "cannot be able to pay").
PREDICATE_FILLER = DENIAL_FILLER | {"need", "needs", "have", "has", "to", "able", "get", "any", "always", "ever", "yet"}
VECTOR_CACHE_ARTICLES = 4096


@dataclass(frozen=True)
class ClaimFacts:
    claim: Claim
    values: tuple[Value, ...]
    negative: bool
    modality: str
    channels: frozenset[str]
    masked: str
    content: frozenset[str]  # stems of content words, denials left out
    channels_affirmed: frozenset[str] = frozenset()
    channels_denied: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()  # stems of what the claim denies ("refundable" in "non-refundable")
    denied_heads: frozenset[str] = frozenset()  # of those, the first each denial denies ("offer" in "don't offer tests")
    denied_of: frozenset[str] = frozenset()  # stems of what passive denials are said of ("food" in "food is not allowed")
    subjects: tuple[frozenset[str] | None, ...] = ()  # what each value is said of (subject.py), by position
    said_subjects: tuple[frozenset[str] | None, ...] = ()  # the same as written, before a bare noun is resolved


def stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ability", "able", "ance", "ence", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if suffix == "es" and not re.search(r"(?:s|x|z|ch|sh)es$", w):
            continue  # "messages" is "message" + s, "boxes" is "box" + es
        if suffix == "s" and w.endswith(("ss", "us", "is")):
            continue  # "class", "bonus", "basis" are singular
        if w.endswith(suffix) and len(w) - len(suffix) >= (4 if suffix in ("ance", "ence", "ment") else 3):
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


RELATED_STEM_MIN_PREFIX = 5


def shared_stems(words_a: frozenset[str], words_b: frozenset[str]) -> frozenset[str]:
    """Stems of `words_a` that are, or begin, a stem of `words_b` or the reverse: "cancel" and "cancellation",
    "renew" and "renewal" (the light stemmer keeps nouns and their verbs apart)."""
    return frozenset(x for x in words_a for y in words_b
                     if x == y or min(len(x), len(y)) >= RELATED_STEM_MIN_PREFIX and (x.startswith(y) or y.startswith(x)))


@functools.lru_cache(maxsize=32768)
def content_stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in re.findall(r"[a-z][a-z'\-]+", text.lower()) if w not in STOPWORDS)


def mask(text: str, values: Sequence[Value]) -> str:
    """The claim with every value replaced by what kind of value it is."""
    out, last = [], 0
    for value in values:
        placeholder = PLACEHOLDERS[value.kind]
        if value.kind == COUNT:
            placeholder = f"several {value.text.split()[-1]}"  # the thing counted as written ("3 movies")
        elif value.kind == QUANTITY:
            placeholder = "a period" if value.unit in ("[time]",) else f"an amount of {value.text.split()[-1]}"
        out.append(text[last:value.start])
        out.append(placeholder)
        last = value.end
    out.append(text[last:])
    return "".join(out)


def _cell_values(claim: Claim, year: int) -> tuple[Value, ...]:
    """A table cell's values read under its column header, so "Monthly price" gives "€40" its period."""
    prefix = f"{claim.column}: "
    shifted = []
    for value in extract_values(prefix + claim.text, year=year):
        if value.start >= len(prefix):
            shifted.append(dataclasses.replace(value, start=value.start - len(prefix), end=value.end - len(prefix)))
    return tuple(shifted)


def _claim_values(claim: Claim, year: int) -> tuple[Value, ...]:
    return _cell_values(claim, year) if claim.column else tuple(extract_values(claim.text, year=year))


def _masked(claim: Claim, values: Sequence[Value]) -> str:
    """The text whose vector aligns this claim with others: values replaced by their kinds, a price-list row's
    leader dots by a colon, a short claim prefixed by its heading, a yes/no answer by its question."""
    masked = spell_out_days(mask(claim.text, values))
    if claim.leader_row:
        masked = LEADER_SPAN_RE.sub(": ", masked, count=1)
    if len(claim.text.split()) <= SHORT_CLAIM_WORDS and "\u2014" in claim.context:
        masked = f"{claim.context.rsplit(chr(0x2014), 1)[-1].strip()} {masked}"
    if claim.question and YES_NO_RE.match(claim.text):
        masked = f"{claim.question} {masked}"
    return masked


def masked_texts(title: str, body: str, year: int) -> list[str]:
    """The masked texts of analyse_text's claims, without the rest of its analysis (stance, subjects, scope
    words): what the index sync embeds for a version, at about half the parse's cost."""
    return [_masked(claim, _claim_values(claim, year)) for claim in split_claims(title, body)]


@functools.lru_cache(maxsize=VECTOR_CACHE_ARTICLES)
def analyse_text(title: str, body: str, year: int) -> tuple[ClaimFacts, ...]:
    """Claims of one article version with their facts; cached, so a turn re-parses nothing it has seen."""
    facts = []
    mentions = named_mentions(title, {})
    for claim in split_claims(title, body):
        values = _claim_values(claim, year)
        masked = _masked(claim, values)
        affirmed, denied = channel_stances(claim.text)
        negative = is_negative(claim.text)
        # A table cell is about its row and column as much as its text ("Guided tour", "Price": "€18").
        content = content_stems(strip_negation(f"{claim.label} {claim.column} {claim.text}" if claim.label else claim.text))
        denied_stems = frozenset(stem(w) for w in denied_words(claim.text)) - DENIAL_FILLER
        denied_heads = frozenset(stem(w) for w in denied_predicates(claim.text, PREDICATE_FILLER))
        passive_subject = frozenset(stem(w) for w in denied_of(claim.text))
        answer = YES_NO_RE.match(claim.text) if claim.question else None
        if answer:
            # "Is there a minimum term? No - memberships run month to month": the answer denies the question.
            negative = (answer.group(1).lower() == "no") != is_negative(claim.question)
            asked = content_stems(strip_negation(claim.question))
            content |= asked
            denied_stems |= asked if negative else frozenset()
            denied_heads |= asked if negative else frozenset()  # the answer denies what was asked
        # A claim that names nothing ("For €30 a month you get:") is said of what its heading states a thing of.
        heading_subject = None if claim.label or claim.question else statement_subject(claim.context.rsplit("\u2014", 1)[-1])
        # A price-list row's values are its label's ("Room hire ....... £18.00"), not what the dots read as.
        said = tuple((None if claim.leader_row else subject_of(claim.text, v.start))
                     or (label_subject(claim.label) if claim.label else heading_subject) for v in values)
        subjects = tuple(resolved(subject, mentions) for subject in said)
        mentions = named_mentions(claim.text, mentions)
        facts.append(ClaimFacts(claim=claim, values=values, negative=negative,
                                modality=modality(claim.text), channels=channels(claim.text), masked=masked,
                                content=content, denied=denied_stems, denied_heads=denied_heads, denied_of=passive_subject, subjects=subjects, said_subjects=said,
                                channels_affirmed=affirmed, channels_denied=denied))
    return tuple(facts)


class ClaimVectors:
    """Masked-claim vectors per article text, computed once and kept (LRU) for every later turn."""

    def __init__(self, encoder: Encoder | None, max_articles: int = VECTOR_CACHE_ARTICLES):
        self.encoder = encoder
        self.max_articles = max_articles
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.encoded_texts = 0

    def vectors(self, facts: Sequence[ClaimFacts]) -> np.ndarray:
        texts = [f.masked for f in facts]
        key = hashlib.sha1("\n".join(texts).encode()).hexdigest()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        vectors = self._encode(texts)
        self._cache[key] = vectors
        if len(self._cache) > self.max_articles:
            self._cache.popitem(last=False)
        return vectors

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        self.encoded_texts += len(texts)
        if self.encoder is not None:
            vectors = np.asarray(self.encoder(texts), dtype=np.float32)
        else:
            vectors = _bag_of_words(texts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


def _bag_of_words(texts: list[str], dims: int = 512) -> np.ndarray:
    """Hashed bag of content stems: the fallback alignment when no sentence model is given."""
    vectors = np.zeros((len(texts), dims), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in content_stems(text):
            vectors[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
    return vectors

"""Where or through which channel one action is done: a restriction against a widening, and one thing kept in
two named places.

"Only at the town office" against "by video call or at either office": the first restricts the action to
channels the second goes beyond. "Lost items are kept at the gatehouse" against "Lost items are kept at the
visitor centre": a thing that is kept in one place cannot be kept in two, so the named places disagree even
though each claim names a place of its own (which elsewhere scopes a claim, as a branch scopes its prices).
General English only; the places' names come from the articles.
"""
from __future__ import annotations

import functools
import re
from dataclasses import replace

from .analysis import ClaimFacts, content_stems, shared_stems
from .scope import Scope, scopes_differ
from .subject import Relation, phrase_stems, relation, statement_subject

# A claim that narrows how something is done: "only", "always", "never", "no longer".
RESTRICTION_RE = re.compile(r"\b(?:only|exclusively|solely|always|never|no longer|restricted to|limited to)\b", re.I)
RESTRICTION_MIN_SIMILARITY = 0.5
RESTRICTION_STRENGTH = 0.7
RESTRICTION_MIN_SHARED_TOPIC = 2
# Words that name a channel or place, not what is done there.
CHANNEL_TOPIC_WORDS = frozenset({"online", "app", "phone", "post", "email", "e-mail", "video", "call", "office", "desk",
                                 "branch", "person", "store", "shop", "website", "portal", "either", "any", "library",
                                 "station", "depot", "clinic", "location", "three", "two", "same", "whichever", "back"})

# Verbs that place one thing in one spot ("kept at", "held behind", "collected from"): a second spot contradicts.
SINGLE_PLACE_RE = re.compile(
    r"\b(?:kept|held|stored|located|based|collected|picked up|handed in|returned|dropped off|takes? place|housed)\s+"
    r"(?:\w+\s+){0,2}?(?:at|in|from|to|behind|inside|next to|beside|by)\s+(?P<place>[^,;.()]+)", re.I)
PLACE_MIN_SIMILARITY = 0.5
WHERE_RE = re.compile(r"\s*where\b", re.I)
# An answer that is only a place: "From the mailroom on the 2nd floor."
PLACE_ANSWER_RE = re.compile(r"\s*(?:from|at|in|inside|behind|on|next to|by)\s+(?P<place>[^,;.()]+)[.!]?\s*$", re.I)
PLACE_STRENGTH = 0.7


def widened_channels(a: ClaimFacts, b: ClaimFacts, *, similarity: float) -> tuple[str, str] | None:
    """One claim restricts an action to some channels ("only at our office"), the other offers that action
    through a channel the first leaves out ("by video call or at either office"): (what each says)."""
    if similarity < RESTRICTION_MIN_SIMILARITY:
        return None
    for narrow, wide, flip in ((a, b, False), (b, a, True)):
        if wide.negative or not narrow.channels_affirmed or not _says(RESTRICTION_RE, narrow.claim.text):
            continue
        if _says(RESTRICTION_RE, wide.claim.text) and wide.channels_affirmed <= narrow.channels_affirmed:
            continue
        if len(shared_stems(_topic(narrow), _topic(wide))) < RESTRICTION_MIN_SHARED_TOPIC:
            continue  # "fares are sold online only" / "cards are applied for online or in person": other actions
        extra = wide.channels_affirmed - narrow.channels_affirmed - narrow.channels_denied
        if extra and not narrow.channels_affirmed & wide.channels_denied:
            said = (narrow.claim.text, wide.claim.text)
            return said[::-1] if flip else said
    return None


def _topic(facts: ClaimFacts) -> frozenset[str]:
    """What a claim is about, its question's words included ("Where are meetings held?" "Only at the office.")."""
    return (facts.content | _question_stems(facts.claim.question)) - CHANNEL_TOPIC_WORDS


# Per claim text, not per aligned pair: each claim meets many others.
@functools.lru_cache(maxsize=32768)
def _says(pattern: re.Pattern, text: str) -> bool:
    return bool(pattern.search(text))


@functools.lru_cache(maxsize=16384)
def _question_stems(question: str) -> frozenset[str]:
    return content_stems(question)


@functools.lru_cache(maxsize=16384)
def _place_in(text: str) -> str | None:
    match = SINGLE_PLACE_RE.search(text)
    return _bare_place(match.group("place")) if match else None


def _bare_place(phrase: str) -> str | None:
    place = re.sub(r"\b(?:the|our|a|an|for \d+ \w+)\b", " ", phrase, flags=re.I)
    return " ".join(place.lower().split()) or None


def _placed(facts: ClaimFacts) -> tuple[frozenset[str] | None, str, bool] | None:
    return _placed_in(facts.claim.text, facts.claim.question)


@functools.lru_cache(maxsize=16384)
def _placed_in(text: str, question: str) -> tuple[frozenset[str] | None, str, bool] | None:
    """(what is placed, where, whether the place answers a "Where …?" question): "Parcels are kept behind the
    desk", or "Where do I pick up my parcels?" answered "From the mailroom on the 2nd floor."."""
    place = _place_in(text)
    if place:
        return statement_subject(text), place, False
    answer = PLACE_ANSWER_RE.match(text) if WHERE_RE.match(question) else None
    if answer and _bare_place(answer.group("place")):
        return phrase_stems(question) or None, _bare_place(answer.group("place")), True
    return None


def two_places(a: ClaimFacts, b: ClaimFacts, *, similarity: float, scope_a: Scope, scope_b: Scope) -> tuple[str, str] | None:
    """The same thing kept (held, collected …) in two different places: (place one, place two). The claims'
    scopes may differ only by the names of those places, and each names the same thing as its subject."""
    if similarity < PLACE_MIN_SIMILARITY or a.negative or b.negative:
        return None
    placed_a, placed_b = _placed(a), _placed(b)
    if placed_a is None or placed_b is None:
        return None
    if scopes_differ(replace(scope_a, names=frozenset()), replace(scope_b, names=frozenset())):
        return None
    (subject_a, place_a, answered_a), (subject_b, place_b, answered_b) = placed_a, placed_b
    if answered_a or answered_b:  # "Where do I pick up my parcels?" names the thing in more words than a sentence
        if not (subject_a and subject_b and subject_a & subject_b) or relation(subject_a, subject_b) is Relation.DIFFERENT:
            return None
    elif relation(subject_a, subject_b) is not Relation.SAME:
        return None
    if place_a in place_b or place_b in place_a or (answered_a or answered_b) and content_stems(place_a) & content_stems(place_b):
        return None
    if any(name.lower() not in place for scope, place in ((scope_a, place_a), (scope_b, place_b)) for name in scope.names):
        return None  # a name outside the place phrase scopes the claim (a branch's page, "Gold members …")
    if all(_names_own_page(f, scope.names) for f, scope in ((a, scope_a), (b, scope_b))):
        return None  # each page is the page of its own place ("Harbour branch": "parcels are kept at Harbour …")
    return place_a, place_b


def _names_own_page(facts: ClaimFacts, names: frozenset[str]) -> bool:
    title = facts.claim.context.split(" \u2014 ", 1)[0].lower()
    return any(re.search(rf"\b{re.escape(name.lower())}\b", title) for name in names)

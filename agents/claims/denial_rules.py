"""Opposite polarity or modality, and channels: one claim denies what the other affirms, a channel one claim
denies and the other affirms, one restricted action done through different channels."""
from __future__ import annotations

import os
import re

from .analysis import RELATED_STEM_MIN_PREFIX, ClaimFacts, content_stems, shared_stems, stem
from .contradiction import AlignedPair, Finding
from .stance import CHANNEL_RES, PERMISSION_RE
from .subject import Relation, actor_before, actors_apart, relation, statement_subject
from .value_rules import name_stems
from .values import (
    MONEY,
    QUANTITY,
    equal_values,
)

POLARITY_MIN_SIMILARITY = 0.55
POLARITY_MIN_OVERLAP = 0.2
POLARITY_MIN_WORDS = 4
POLARITY_CLOSE_SIMILARITY = 0.6  # claims this close need only share a denied word, not the denied verb itself
POLARITY_LOOSE_MIN_SIMILARITY = 0.45
DENIAL_BASE_STRENGTH = 0.5
DENIAL_WORD_STRENGTH = 0.05
# A claim that says it is a change ("we no longer …", "we now also …"): a denial of it is no different wording of one rule.
CHANGE_STATED_RE = re.compile(r"\b(?:no longer|any ?more|now also|also now|from today)\b", re.I)
POLARITY_LOOSE_MIN_DENIED = 2  # "Non-returnable items." labels a list; it states no rule to deny
CHANNEL_MIN_SIMILARITY = 0.6
CROSSED_CHANNEL_MIN_SIMILARITY = 0.5  # a channel one claim denies and the other affirms, of something both name
CHANNEL_WORDS = frozenset({"online", "website", "web", "portal", "app", "phone", "post", "email", "e-mail", "chat", "video", "call",
                           "office", "desk", "branch"})
AUDIENCE_OR_AGE = re.compile(r"\b(?:age|aged|adult|child|children|kid|member|student|senior|eligible|"
                             r"eligibility|qualif\w+|under|over|resident|guest|teen\w*|infant|pet|dog|animal)\w*", re.I)


def denies_what_other_affirms(a: ClaimFacts, b: ClaimFacts, similarity: float) -> bool:
    """Loosely aligned claims, one denying at least two things the other states ("we can't accept debit cards"
    / "you can now pick up with a debit card")."""
    if similarity < POLARITY_LOOSE_MIN_SIMILARITY or a.negative == b.negative:
        return False
    negative, positive = (a, b) if a.negative else (b, a)
    shared = negative.denied & positive.content
    if len(shared | (negative.denied_of & positive.content)) >= POLARITY_LOOSE_MIN_DENIED:
        return True
    # One word denied of the very thing the other affirms it of ("Gold passes are non-transferable" /
    # "Gold passes can be transferred"): the statements' subjects share their words.
    return bool(shared) and relation(statement_subject(a.claim.text), statement_subject(b.claim.text)) in (
        Relation.SAME, Relation.NARROWER)


def denied_action_affirmed(a: ClaimFacts, b: ClaimFacts) -> bool:
    """The action one claim denies on some channel is what the other claim does ("we no longer accept paper
    forms, whether posted or handed in" / "hand in your paper forms at the desk")."""
    for denier, other in ((a, b), (b, a)):
        if not denier.channels_denied:
            continue
        if denier.denied_heads & other.content and (denier.denied & other.content) - CHANNEL_WORDS:
            return True
        # "Cancellations cannot be made online" / "How do I cancel? Online: …": what a passive denial is said of.
        if shared_stems(denier.denied_of, other.content | content_stems(other.claim.question)):
            return True
    return False


def one_action(a: ClaimFacts, b: ClaimFacts) -> bool:
    """Two claims about one action: a word in common beyond the channels and the names they use ("Quillo Fibre
    is switched on by an engineer, never from the app" / "our Quillo Fibre team reads every message in the app"
    share only the product's name and the app). A claim's heading may name its action: "never from the app" under
    "Activation" and "you activate it in the app" are about one action."""
    words_a, words_b = _words_beside_channels(a), _words_beside_channels(b)
    shared = (_word_family(words_a, words_b) | _word_family(words_a | content_stems(a.claim.context), words_b)
              | _word_family(words_a, words_b | content_stems(b.claim.context)))
    # A name both claims use (the product's) is not the action; a label only one uses may be ("press Start").
    return bool(shared - (name_stems(a, b) & a.content & b.content)) or denied_action_affirmed(a, b)


def _word_family(words_a: frozenset[str], words_b: frozenset[str]) -> frozenset[str]:
    """shared_stems, and words of one family the light stemmer leaves apart ("activate" / "activation"): all
    but their last three letters in common."""
    return shared_stems(words_a, words_b) | frozenset(
        x for x in words_a for y in words_b
        if len(prefix := os.path.commonprefix([x, y])) >= RELATED_STEM_MIN_PREFIX and len(prefix) >= min(len(x), len(y)) - 3)


def _words_beside_channels(facts: ClaimFacts) -> frozenset[str]:
    """The claim's content words outside the phrases that name a channel ("through the form on the website")."""
    text = facts.claim.text
    for pattern in CHANNEL_RES.values():
        text = pattern.sub(" ", text)
    return content_stems(text) - CHANNEL_WORDS


def shared_threshold(a: ClaimFacts, b: ClaimFacts) -> bool:
    """Both claims name the same period or amount: opposite polarity then splits a rule at that point."""
    return any(equal_values(x, y) for x in a.values if x.kind == QUANTITY for y in b.values if y.kind == QUANTITY)


def agreeing_prices(a: ClaimFacts, b: ClaimFacts) -> bool:
    prices_a = [v for v in a.values if v.kind == MONEY]
    prices_b = [v for v in b.values if v.kind == MONEY]
    return bool(prices_a and prices_b) and all(any(equal_values(x, y) for y in prices_b) for x in prices_a)


CROSSED_CHANNEL_STRENGTH = 0.8


def denial_finding(p: AlignedPair) -> Finding | None:
    """Opposite polarity (one denies what the other affirms) or modality (required / optional)."""
    a, b, similarity = p.a, p.b, p.similarity
    if p.statements_apart or not ((similarity >= POLARITY_MIN_SIMILARITY and p.overlap >= POLARITY_MIN_OVERLAP
                                   or denies_what_other_affirms(a, b, similarity))
                                  and min(len(a.claim.text.split()), len(b.claim.text.split())) >= POLARITY_MIN_WORDS):
        return None
    opposite = a.negative != b.negative or {a.modality, b.modality} == {"required", "optional"}
    if opposite and a.negative != b.negative:
        # The denied words must be what the other claim affirms: "non-refundable" against "we refund".
        negative, positive = (a, b) if a.negative else (b, a)
        # One shared word must be what is denied, not a noun after it ("we don't rent kayaks at the lake"
        # does not deny "a life vest added to your kayak hire: $5").
        shared = negative.denied & positive.content
        # What a passive denial is said of counts only beside a denied word ("outside food is not allowed in the
        # park" / "bring your own food into the park"), never alone ("the difference is not paid back").
        # A channel alone is shared by every action done there: it counts when the claims share the action too.
        close_denial = bool(shared - CHANNEL_WORDS) or bool(shared) and one_action(a, b)
        opposite = (len(shared | (negative.denied_of & positive.content)) >= 2 or bool(shared & negative.denied_heads)
                    or close_denial and similarity >= POLARITY_CLOSE_SIMILARITY)
    if opposite and a.negative != b.negative and _denied_of_other_actors(a, b):
        opposite = False  # "bicycles cannot board" / "cats board in a basket": each rule is of its own actor
    if opposite and agreeing_prices(a, b):
        opposite = False  # "free of charge" / "we don't charge": one price said two ways
    if opposite and a.negative != b.negative and shared_threshold(a, b):
        # "until 24 hours before: can" / "less than 24 hours before: can no longer": a rule and its converse.
        opposite = False
    if not opposite:
        return None
    ctype = "eligibility" if AUDIENCE_OR_AGE.search(a.claim.text + " " + b.claim.text) else "policy"
    if a.channels or b.channels:
        ctype = "procedure"
    strength = 0.5 + 0.5 * min(1.0, (similarity - POLARITY_MIN_SIMILARITY) / (1 - POLARITY_MIN_SIMILARITY))
    negative, positive = (a, b) if a.negative else (b, a)
    if a.negative != b.negative and (
            similarity < POLARITY_MIN_SIMILARITY and PERMISSION_RE.search(positive.claim.text)
            or CHANGE_STATED_RE.search(a.claim.text + " " + b.claim.text)):
        # A denial of what the other claim permits, or either claim saying it changed ("no longer", "now also"):
        # each word the denial shares with the other claim's statement is evidence of its own.
        shared_words = (negative.denied | negative.denied_of) & positive.content
        strength = max(strength, DENIAL_BASE_STRENGTH + DENIAL_WORD_STRENGTH * len(shared_words))
    return ctype, min(1.0, strength), a.claim.text, b.claim.text


def _word_position(text: str, stems: frozenset[str]) -> int | None:
    match = next((m for m in re.finditer(r"[A-Za-z][A-Za-z'\-]*", text) if stem(m.group()) in stems), None)
    return match.start() if match else None


def _denied_of_other_actors(a: ClaimFacts, b: ClaimFacts) -> bool:
    """The verb one claim denies and the other affirms is done by different actors in each."""
    negative, positive = (a, b) if a.negative else (b, a)
    shared = negative.denied & positive.content
    at_negative, at_positive = _word_position(negative.claim.text, shared), _word_position(positive.claim.text, shared)
    if at_negative is None or at_positive is None:
        return False
    return actors_apart(actor_before(negative.claim.text, at_negative), actor_before(positive.claim.text, at_positive),
                        negative.claim.with_heading, positive.claim.with_heading)


def crossed_channel_finding(p: AlignedPair) -> Finding | None:
    """A channel one claim denies and the other affirms, for one action."""
    a, b = p.a, p.b
    crossed = (a.channels_denied & b.channels_affirmed) | (b.channels_denied & a.channels_affirmed)
    if crossed and not p.statements_apart and (p.similarity >= CHANNEL_MIN_SIMILARITY and one_action(a, b) or (
            p.similarity >= CROSSED_CHANNEL_MIN_SIMILARITY and denied_action_affirmed(a, b))):
        return "procedure", CROSSED_CHANNEL_STRENGTH, a.claim.text, b.claim.text
    return None

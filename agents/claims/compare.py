"""Comparing two aligned claims: values that cannot both hold, opposite polarity or modality, different
channels for one restricted action, and near-copies that differ in a number, a name or a denial."""
from __future__ import annotations

import difflib
import functools
import os
import re
from collections import Counter
from dataclasses import dataclass, replace

from agents.types import CONFLICT_TYPES

from .analysis import RELATED_STEM_MIN_PREFIX, ClaimFacts, content_stems, shared_stems, stem
from .places import (
    ORIGIN_STRENGTH,
    PLACE_STRENGTH,
    RESTRICTION_STRENGTH,
    origin_against_any_place,
    two_places,
    widened_channels,
)
from .scope import DAYS, Scope, days_in, proper_names, scopes_differ, scopes_uneven
from .stance import CHANNEL_RES, NEGATION_RE, PERMISSION_RE
from .subject import Relation, phrase_stems, relation, statement_subject, subject_of
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
    comparable,
    equal_values,
)

# Alignment thresholds (cosine of masked claims): tuned on the development half of the broad corpus.
VALUE_MIN_SIMILARITY = 0.62
VALUE_MIN_SIMILARITY_WITH_OVERLAP = 0.45  # lower when the claims share their content words
VALUE_MIN_OVERLAP = 0.25
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
LOOSE_VALUE_MIN_SIMILARITY = 0.5  # values named by the same words, in claims only loosely aligned
AGE_MIN_SIMILARITY = 0.5  # ages are specific enough to compare in claims that are only loosely aligned
CHANNEL_MIN_SIMILARITY = 0.6
CROSSED_CHANNEL_MIN_SIMILARITY = 0.5  # a channel one claim denies and the other affirms, of something both name
CHANNEL_WORDS = frozenset({"online", "website", "web", "portal", "app", "phone", "post", "email", "e-mail", "chat", "video", "call",
                           "office", "desk", "branch"})
ADDRESS_MIN_SIMILARITY = 0.75
NEAR_COPY_RATIO = 0.8
YEAR_RE = re.compile(r"1[5-9]\d\d|20\d\d")
NEAR_COPY_MAX_WORDS = 80
NAME_SWAP_CONFIDENCE = 0.8
NARROWER_SUBJECT_STRENGTH = 0.7
UNKNOWN_SUBJECT_STRENGTH = 0.8  # loosely aligned claims whose subjects cannot be compared  # "a replacement card costs €5" / "the card costs €12": likelier two prices
POLICY_WORDS = re.compile(r"\b(?:return|refund|cancel|notice|deadline|within|before|after|claim|report|exchange|"
                          r"appeal|warranty|guarantee|trial|grace|expire|valid)\w*", re.I)
AUDIENCE_OR_AGE = re.compile(r"\b(?:age|aged|adult|child|children|kid|member|student|senior|eligible|"
                             r"eligibility|qualif\w+|under|over|resident|guest|teen\w*|infant|pet|dog|animal)\w*", re.I)
# Words that say a value is a price, a number or a time but not what of: no help telling two values apart.
GENERIC_HEAD_WORDS = frozenset("""fee fees price prices priced cost costs charge charges charged pay pays paid
payable call phone number numbers tel telephone line ring dial reach contact open opens opening close closes
closed from until till between only just total amount each day days week weeks month months year years hour
hours minute minutes time times am pm now currently usual usually normally standard least most before after within
up to""".split())
HEAD_WINDOW_WORDS = 4
DURATION_SHARED_WORDS = 3  # a thing ("unworn shoes") is in every rule about it; an action on it takes more words
# A length of time counted back from an event ("up to 48 hours before your visit", "3 days or more before moving
# day"): the event is what it is counted from, not what the time is of.
NOTICE_AFTER_RE = re.compile(r"\s*(?:or (?:more|less|longer)\s+|'s notice\s+|notice\s+)?(?:before|prior to|in advance|ahead)\b", re.I)
HEAD_BREAK_RE = re.compile(r"[,;()]|\.\s")
# A claim that quotes another value as a contrast ("60% instead of our usual 50%"): a weaker disagreement.
CONTRAST_RE = re.compile(r"\b(?:instead of|rather than|usual(?:ly)?|normally|reduced from|down from|up from|"
                         r"compared (?:to|with)|was|were|previously)\b", re.I)
# A contrast that names an exception to the usual value ("60% instead of our usual 50%") rather than a change
# ("now 60%, up from 50%"): the claim agrees with the usual value and adds a case of its own.
EXCEPTION_CONTRAST_RE = re.compile(r"\b(?:instead of|rather than|(?:our|the) usual|(?:our|the) normal|normally)\b", re.I)
EXCEPTION_CONTRAST_STRENGTH = 0.35
DAY_WORDS = frozenset(stem(d) for d in DAYS) | {"weekday", "weekend", "daily", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}
STRONG_SIMILARITY = 0.75  # claims this close need no shared head word
ACRONYM_RE = re.compile(r"\b[A-Z]{2,}\b")  # names too ("the Quillo SIM"), which proper_names leaves out
ONE_RULE_SIMILARITY = 0.85  # claims this close state one rule: periods in them are of one thing
UNNAMED_VALUE_MIN_SIMILARITY = 0.7
VALUE_TYPE = {UNLIMITED: "quantity", MONEY: "price", PERCENT: "price", CLOCK: "hours", PHONE: "contact", EMAIL: "contact", URL: "contact",
              DATE: "date", AGE: "eligibility", QUANTITY: "quantity", COUNT: "quantity"}


@dataclass(frozen=True)
class Contradiction:
    type: str
    confidence: float
    said_a: str  # what each side says, as written
    said_b: str
    a: ClaimFacts
    b: ClaimFacts

    def __post_init__(self) -> None:
        # Findings are stored, filtered and served by these types: an unknown one would reach the console as such.
        if self.type not in CONFLICT_TYPES:
            raise ValueError(f"conflict type {self.type!r} is none of agents.types.CONFLICT_TYPES")


def _own_head(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """What the claim itself says a value is of: the content words next to it ("placement" in "placement fee:
    $250"), or a table cell's column ("Meeting room time included | 12 hours")."""
    text = facts.claim.text
    # The window stays in the value's clause: "(5 sailings daily, crossing 42 minutes)" is a crossing's length.
    before = " ".join(HEAD_BREAK_RE.split(text[:value.start])[-1].split()[-HEAD_WINDOW_WORDS:])
    after = " ".join(HEAD_BREAK_RE.split(text[value.end:])[0].split()[:HEAD_WINDOW_WORDS - 1])
    if value.kind == QUANTITY and value.unit == "[time]" and NOTICE_AFTER_RE.match(text, value.end):
        after = ""  # "3 days before the show": the show is what the time is counted back from, not what it is of
    head = _head_words(f"{before} {after}")
    if not head and facts.claim.label:
        head = _head_words(facts.claim.column)
    return head


@functools.lru_cache(maxsize=16384)
def _head_words(text: str) -> frozenset[str]:
    """Content words that can say what a value is of: not price, time or day words ("Mon-Sat", "pm")."""
    return frozenset(w for w in content_stems(text) - GENERIC_HEAD_WORDS - DAY_WORDS if not days_in(w))


def _head(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """What a value is of: what its claim says, else its heading ("Monday to Friday: 06:00-22:00" under
    "Opening hours")."""
    return _own_head(facts, value) or _head_words(facts.claim.context.rsplit("\u2014", 1)[-1])


def _clause_words(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """The content words of the clause a value stands in."""
    text = facts.claim.text
    return _head_words(f"{HEAD_BREAK_RE.split(text[:value.start])[-1]} {HEAD_BREAK_RE.split(text[value.end:])[0]}")


def _durations_of_one_thing(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    """Two periods whose clauses say, in other words and order, what they are for: "bring them back within 30
    days of collection" / "you have 14 days from the day you collect them to bring them back". Not a time
    counted back from an event ("arrive 15 minutes before departure"): its own words say what it is for, and
    the event is another rule's too ("the gate closes 5 minutes before departure")."""
    if not all(v.kind == QUANTITY and v.unit == "[time]" for v in (x, y)):
        return False
    if NOTICE_AFTER_RE.match(a.claim.text, x.end) or NOTICE_AFTER_RE.match(b.claim.text, y.end):
        return False
    # The names of what both rules are about ("for Quillo Router equipment") say nothing of which period it is.
    names = _name_stems(a, b)
    clause_x, clause_y = _clause_words(a, x) - names, _clause_words(b, y) - names
    # What one period is next to must be in the other's clause: "refunds reach your account within 5 days" and
    # "30 days from delivery to return unworn shoes" share the shoes and the returning, not what the 5 days are.
    named = shared_stems(_own_head(a, x), clause_y) or shared_stems(_own_head(b, y), clause_x)
    return bool(named) and len(shared_stems(clause_x, clause_y)) >= DURATION_SHARED_WORDS


def _periods_named_apart(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    """Two periods each named by its own words, which the other claim does not use ("a minimum term of 24 months" /
    "give us 60 days notice"): one policy states several (a term, a notice period, a returns window), so claims
    about one product read alike whichever period they give."""
    if not all(v.kind == QUANTITY and v.unit == "[time]" for v in (x, y)):
        return False
    head_x, head_y = _own_head(a, x), _own_head(b, y)
    # Not named apart when the words next to one period are anywhere in the other claim ("the minimum booking is
    # 3 hours" / "every booking is charged for at least 4 hours").
    return bool(head_x) and bool(head_y) and not shared_stems(head_x, b.content) and not shared_stems(head_y, a.content)


def _same_subject(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value, similarity: float) -> bool:
    # Two periods each named in its own words are two rules of one product, however alike the claims read, unless
    # their clauses say they are for one thing; only near-paraphrases state one rule whatever words stand next to
    # the period ("up to 6 hours before" / "until 2 hours before").
    if (similarity < ONE_RULE_SIMILARITY and _periods_named_apart(a, x, b, y)
            and not _durations_of_one_thing(a, x, b, y)):
        return False
    if similarity >= STRONG_SIMILARITY or _subject_relation(a, x, b, y) is Relation.SAME:
        return True
    head_x, head_y = _head(a, x), _head(b, y)
    if head_x & head_y or _durations_of_one_thing(a, x, b, y):
        return True
    # Nothing in one claim names what its value is of (a heading may, but pages head the same facts
    # differently: "Opening hours" / "Find us"): the sentences must say it.
    if not _own_head(a, x) or not _own_head(b, y):
        return similarity >= UNNAMED_VALUE_MIN_SIMILARITY
    return False


ALLOWANCE_BEFORE_RE = re.compile(r"\b(?:up to|maximum(?: of)?|max\.?|no more than|at most|limit(?:ed)? (?:of|to)|"
                                 r"includes?|included|allowance of|capped at)\s*$", re.I)


def _is_allowance(facts: ClaimFacts, value: Value) -> bool:
    """An amount given per period ("150 miles a day") or as a bound ("up to 4 visits"): what "unlimited" denies.
    A bare length ("a session (60 minutes)") is no limit."""
    return bool(value.key[2]) or bool(ALLOWANCE_BEFORE_RE.search(facts.claim.text[:value.start]))


def _unlimited_contradiction(a: ClaimFacts, b: ClaimFacts) -> tuple[str, float, str, str] | None:
    """"unlimited mileage" against "150 miles a day": a limit one side denies."""
    for first, second, flip in ((a, b, False), (b, a, True)):
        unlimited = [v for v in first.values if v.kind == UNLIMITED]
        limits = [v for v in second.values if v.kind in (QUANTITY, COUNT) and v.role == "amount" and _is_allowance(second, v)
                  and (not unlimited or _subject_relation(first, unlimited[0], second, v) is not Relation.DIFFERENT)]
        if unlimited and limits and not any(v.kind == UNLIMITED for v in second.values):
            said = (unlimited[0].text, _said(limits))
            return (UNLIMITED, 0.8, *(said[::-1] if flip else said))
    return None


def _named_same_thing(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    return bool(_head(a, x) & _head(b, y))


def _value_contradiction(a: ClaimFacts, b: ClaimFacts, similarity: float,
                         *, heads_must_match: bool = False) -> tuple[str, float, str, str] | None:
    """Values of one kind that cannot both hold. With `heads_must_match` (loosely aligned claims) only
    values whose neighbouring words name the same thing count ("within 48 hours of delivery" /
    "within 3 days of your delivery")."""
    best = None if heads_must_match else _unlimited_contradiction(a, b)
    for kind in sorted({v.kind for v in a.values} & {v.kind for v in b.values}):
        if kind == CLOCK and _calendar_day(a) != _calendar_day(b):
            continue  # hours on one particular day (31 December) are an exception to the usual ones
        if kind == MONEY and _bundle_differs(a, b):
            continue  # "5 sessions: £160" and "a single session costs £31.50" price different things
        if kind in (EMAIL, URL) and similarity < ADDRESS_MIN_SIMILARITY:
            continue  # a business has an address per purpose (bookings, lost property): only one purpose counts
        mine = [v for v in a.values if v.kind == kind]
        theirs = [v for v in b.values if v.kind == kind]
        def subject(x: Value, y: Value) -> bool:
            if kind == AGE:
                return True  # an age limit is said of whoever is admitted: audiences are compared as scope
            if _subject_relation(a, x, b, y) is Relation.DIFFERENT:
                return False
            if kind == CLOCK and _value_days(a, x) and _value_days(b, y) and not _value_days(a, x) & _value_days(b, y):
                return False  # "weekdays 09:00-16:00 and all day at weekends" / "Saturday: 08:00-20:00"
            if heads_must_match:
                return _named_same_thing(a, x, b, y) or _subject_relation(a, x, b, y) is Relation.SAME
            return _same_subject(a, x, b, y, similarity)

        pairs = [(x, y) for x in mine for y in theirs if comparable(x, y) and subject(x, y)]
        loosely = False
        if not pairs:
            pairs = [(x, y) for x in mine for y in theirs if comparable(x, y, strict_period=False) and subject(x, y)]
            loosely = True
        if not pairs:
            continue
        matched_mine = {id(x) for x, y in pairs if equal_values(x, y)}
        matched_theirs = {id(y) for x, y in pairs if equal_values(x, y)}
        if kind == CLOCK:
            # "daily 7-10:30" against "07:00-10:30 weekdays, 07:30-11:00 weekends": a time matches only when the
            # other claim gives it on every day both name.
            matched_mine -= _unmatched_on_some_day(a, mine, b, theirs)
            matched_theirs -= _unmatched_on_some_day(b, theirs, a, mine)
        paired_mine = {id(x) for x, _ in pairs}
        paired_theirs = {id(y) for _, y in pairs}
        open_mine = [x for x in mine if id(x) not in matched_mine and id(x) in paired_mine]
        open_theirs = [y for y in theirs if id(y) not in matched_theirs and id(y) in paired_theirs]
        if not open_mine or not open_theirs:
            continue  # every comparable value is stated on the other side too
        # Partly the same: one end of a range moved (hours), or a claim that quotes the other's value as a
        # contrast ("60% instead of our usual 50%"), which is much weaker.
        partly = bool(matched_mine) and (kind == CLOCK or CONTRAST_RE.search(a.claim.text + " " + b.claim.text))
        strength = 1.0 if not partly else (0.8 if kind == CLOCK else 0.55)
        if (kind != CLOCK and EXCEPTION_CONTRAST_RE.search(a.claim.text + " " + b.claim.text)
                and any(comparable(x, y) and equal_values(x, y) for x in mine for y in theirs)):
            strength = EXCEPTION_CONTRAST_STRENGTH
        relations = {_subject_relation(a, x, b, y) for x, y in pairs
                     if id(x) not in matched_mine and id(y) not in matched_theirs}
        if relations == {Relation.NARROWER}:
            strength *= NARROWER_SUBJECT_STRENGTH
        elif (Relation.SAME not in relations and similarity < STRONG_SIMILARITY and kind != AGE
              and not (kind == CLOCK and all(_value_days(a, x) for x in open_mine)
                       and all(_value_days(b, y) for y in open_theirs))):
            # An age limit is said of whoever is admitted; the audience is compared as scope, not as a subject.
            # Hours compared day by day, each under the days it is given for, are one schedule's.
            strength *= UNKNOWN_SUBJECT_STRENGTH
        if loosely:
            strength *= 0.8  # "€175 a month" against a bare "€189": probably the same period, not said
        if best is None or strength > best[1]:
            best = (kind, strength, _said(open_mine), _said(open_theirs))
    return best


def _clock_days(facts: ClaimFacts, value: Value) -> frozenset[str]:
    return _value_days(facts, value) or days_in(facts.claim.text)


def _unmatched_on_some_day(a: ClaimFacts, mine: list[Value], b: ClaimFacts, theirs: list[Value]) -> set[int]:
    """Times of `a` that `b` does not give on some day both claims name (days said on both sides)."""
    schedule: dict[str, set] = {}
    for y in theirs:
        for day in _clock_days(b, y):
            schedule.setdefault(day, set()).add(y.key)
    unmatched = set()
    for x in mine:
        days = _clock_days(a, x) & schedule.keys()
        if any(x.key not in schedule[day] for day in days):
            unmatched.add(id(x))
    return unmatched


VALUE_SEGMENT_RE = re.compile(r"[;,]|\band\b|\bbut\b")


def _value_days(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """The days named in the stretch of the claim that holds the value (its clause, or a label before it)."""
    text = facts.claim.text
    starts = [m.end() for m in VALUE_SEGMENT_RE.finditer(text, 0, value.start)]
    end = VALUE_SEGMENT_RE.search(text, value.end)
    segment_start, segment_end = starts[-1] if starts else 0, end.start() if end else len(text)
    # "Open seven days a week: Monday to Saturday from 10 am": the days after the last colon are the value's own.
    label_end = text.rfind(":", segment_start, value.start)
    if label_end >= 0 and days_in(text[label_end + 1:segment_end]):
        segment_start = label_end + 1
    return days_in(text[segment_start:segment_end])


def _subject_relation(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> Relation:
    subject_a, subject_b = _subject(a, x), _subject(b, y)
    found = relation(subject_a, subject_b)
    if found is Relation.DIFFERENT and _named_in(subject_a - subject_b, b) and _named_in(subject_b - subject_a, a):
        # "Parking at the North Gate (car park 2)" / "Car park 2 (North Gate)": each claim names the other's words
        # for the thing too, so the subjects are one thing said two ways.
        return Relation.SAME
    if found is Relation.NARROWER and relation(_subject(a, x, as_said=True), _subject(b, y, as_said=True)) is Relation.SAME:
        # "the shuttle" on a page titled "Hotel shuttle" and "our shuttle" elsewhere: only the title made one narrower.
        found = Relation.SAME
    if found is Relation.SAME and len(subject_a) == 1:
        # "The card costs €12" / "The card is free": a bare noun is the one its article's title names.
        title_a, title_b = (phrase_stems(f.claim.context.split(" \u2014 ", 1)[0]) for f in (a, b))
        if subject_a <= title_a and subject_a <= title_b and relation(title_a, title_b) is Relation.DIFFERENT:
            return Relation.DIFFERENT
    return found


def _named_in(words: frozenset[str], facts: ClaimFacts) -> bool:
    return words <= phrase_stems(facts.claim.text)


def _subject(facts: ClaimFacts, value: Value, *, as_said: bool = False) -> frozenset[str] | None:
    subjects = facts.said_subjects if as_said else facts.subjects
    return next((subject for other, subject in zip(facts.values, subjects) if other is value), None)


def _denies_what_other_affirms(a: ClaimFacts, b: ClaimFacts, similarity: float) -> bool:
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


def _denied_action_affirmed(a: ClaimFacts, b: ClaimFacts) -> bool:
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


def _one_action(a: ClaimFacts, b: ClaimFacts) -> bool:
    """Two claims about one action: a word in common beyond the channels and the names they use ("Quillo Fibre
    is switched on by an engineer, never from the app" / "our Quillo Fibre team reads every message in the app"
    share only the product's name and the app). A claim's heading may name its action: "never from the app" under
    "Activation" and "you activate it in the app" are about one action."""
    words_a, words_b = _words_beside_channels(a), _words_beside_channels(b)
    shared = (_word_family(words_a, words_b) | _word_family(words_a | content_stems(a.claim.context), words_b)
              | _word_family(words_a, words_b | content_stems(b.claim.context)))
    # A name both claims use (the product's) is not the action; a label only one uses may be ("press Start").
    return bool(shared - (_name_stems(a, b) & a.content & b.content)) or _denied_action_affirmed(a, b)


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


def _name_stems(a: ClaimFacts, b: ClaimFacts) -> frozenset[str]:
    """The stems of the names either claim uses (capitalised inside its sentence: products, plans, places)."""
    return frozenset(stem(w.lower()) for text in (a.claim.text, b.claim.text)
                     for w in proper_names(text) | set(ACRONYM_RE.findall(text)))


def _shared_threshold(a: ClaimFacts, b: ClaimFacts) -> bool:
    """Both claims name the same period or amount: opposite polarity then splits a rule at that point."""
    return any(equal_values(x, y) for x in a.values if x.kind == QUANTITY for y in b.values if y.kind == QUANTITY)


def _agreeing_prices(a: ClaimFacts, b: ClaimFacts) -> bool:
    prices_a = [v for v in a.values if v.kind == MONEY]
    prices_b = [v for v in b.values if v.kind == MONEY]
    return bool(prices_a and prices_b) and all(any(equal_values(x, y) for y in prices_b) for x in prices_a)


def _bundle_differs(a: ClaimFacts, b: ClaimFacts) -> bool:
    amounts_a = [v for v in a.values if v.kind in (QUANTITY, COUNT)]
    amounts_b = [v for v in b.values if v.kind in (QUANTITY, COUNT)]
    return any(comparable(x, y, strict_period=False) and not equal_values(x, y) for x in amounts_a for y in amounts_b)


def _calendar_day(facts: ClaimFacts) -> bool:
    return any(v.kind == DATE and v.key[2] for v in facts.values)


def _said(values: list[Value]) -> str:
    return " / ".join(dict.fromkeys(v.text for v in values))


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


def _template_siblings(a: ClaimFacts, b: ClaimFacts) -> bool:
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


def _near_copy_difference(a: ClaimFacts, b: ClaimFacts) -> tuple[str, str, str, bool] | None:
    """Two near-identical claims: (type, what one says, what the other says, only a name differs) when the
    words that differ are a denial or a name."""
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
            years = YEAR_RE.fullmatch(left.strip(TRIM)) and YEAR_RE.fullmatch(right.strip(TRIM))
            return ("date" if years else "quantity"), left.strip(TRIM), right.strip(TRIM), False
    return None


TAX_RATE_RE = re.compile(r"\b(?:vat|tax(?:es)?|gst|sales tax)\b", re.I)
TAX_RATE_WINDOW = 25
TAX_CONVERTED_STRENGTH = 0.9
TAX_UNSAID_DAMPING = 0.85  # "$40 plus tax" against a price that does not say: likely before tax, not sure


def _tax_rate(facts: ClaimFacts) -> float | None:
    """The tax rate a claim states next to a tax word ("exclude 21% VAT"), as a percentage."""
    text = facts.claim.text
    for value in facts.values:
        if value.kind == PERCENT and TAX_RATE_RE.search(text[max(0, value.start - TAX_RATE_WINDOW):value.end + TAX_RATE_WINDOW]):
            return value.key[0]
    return None


@functools.lru_cache(maxsize=32768)
def _untaxed(scope: Scope) -> Scope:
    """The scope with nothing said of tax (cached: it is asked of one claim's scope in every pair)."""
    return replace(scope, tax=frozenset())


def _tax_converted_contradiction(a: ClaimFacts, b: ClaimFacts, similarity: float,
                                 scope_a: Scope, scope_b: Scope) -> Contradiction | None:
    """Claims set apart only by tax ("€228.69 a month including 21% VAT" / "€175 a month"): when the taxed claim
    states its rate, the other price conflicts if it is neither the gross nor the net figure."""
    if scopes_differ(_untaxed(scope_a), _untaxed(scope_b)):
        return None
    for taxed, other, taxed_scope, other_scope, flip in ((a, b, scope_a, scope_b, False), (b, a, scope_b, scope_a, True)):
        rate = _tax_rate(taxed) if "included" in taxed_scope.tax and "included" not in other_scope.tax else None
        if rate is None:
            continue
        net = replace(taxed, values=tuple(
            replace(v, key=(v.key[0], round(v.key[1] / (1 + rate / 100), 2), v.key[2])) if v.kind == MONEY else v
            for v in taxed.values))
        gross_hit = _value_contradiction(taxed, other, similarity)
        net_hit = _value_contradiction(net, other, similarity)
        if gross_hit is None or net_hit is None or gross_hit[0] != MONEY or net_hit[0] != MONEY:
            continue
        strength = TAX_CONVERTED_STRENGTH * min(gross_hit[1], net_hit[1])
        said_taxed, said_other = f"{gross_hit[2]} including {rate:g}% tax", gross_hit[3]
        said = (said_other, said_taxed) if flip else (said_taxed, said_other)
        return Contradiction("price", strength * (0.55 + 0.45 * min(1.0, max(0.0, (similarity - VALUE_MIN_SIMILARITY_WITH_OVERLAP)
                                                                                / (1 - VALUE_MIN_SIMILARITY_WITH_OVERLAP)))),
                             *said, a, b)
    return None


# "Our X has moved", "the Y has changed": a claim that what it names is no longer as stated elsewhere.
CHANGE_ANNOUNCED_RE = re.compile(r"\b(?:has|have) (?:now )?(?:moved|relocated|changed|closed|been (?:moved|relocated|replaced|"
                                 r"discontinued|withdrawn))\b", re.I)
ANNOUNCED_CHANGE_MIN_SIMILARITY = 0.4
ANNOUNCED_CHANGE_MIN_SUBJECT = 2
ANNOUNCED_CHANGE_STRENGTH = 0.6


@functools.lru_cache(maxsize=32768)
def _announces_change(text: str) -> bool:
    return CHANGE_ANNOUNCED_RE.search(text) is not None


def _announced_change(a: ClaimFacts, b: ClaimFacts, similarity: float) -> tuple[str, str] | None:
    """One claim announces that a thing has moved or changed ("Our harbour kiosk has moved.") and the other
    states where or when that thing is ("Harbour kiosk: on the quay, open 9-5"): the other is the old state."""
    if similarity < ANNOUNCED_CHANGE_MIN_SIMILARITY:
        return None
    for change, stated, flip in ((a, b, False), (b, a, True)):
        if not _announces_change(change.claim.text) or _announces_change(stated.claim.text):
            continue
        subject = statement_subject(change.claim.text) or frozenset()
        if len(subject) >= ANNOUNCED_CHANGE_MIN_SUBJECT and {stem(w) for w in subject} <= stated.content | {
                stem(w) for w in content_stems(stated.claim.context)}:
            said = (change.claim.text, stated.claim.text)
            return said[::-1] if flip else said
    return None


def own_page_siblings(a: ClaimFacts, b: ClaimFacts) -> bool:
    """One template sentence on each product's own page ("Our Lite team …" / "Our Max team …"): the claims
    differ only in a name, and each names the page it stands on. Each says something of its own subject."""
    return _own_page_names(a, b, _near_copy_difference(a, b))


def _own_page_names(a: ClaimFacts, b: ClaimFacts, near_copy: tuple[str, str, str, bool] | None) -> bool:
    return bool(near_copy and near_copy[3] and _each_names_its_own_page(a, near_copy[1], b, near_copy[2]))


def compare_claims(a: ClaimFacts, b: ClaimFacts, *, similarity: float, scope_a: Scope, scope_b: Scope) -> Contradiction | None:
    near_copy = _near_copy_difference(a, b)
    if near_copy is not None and near_copy[3]:
        if _own_page_names(a, b, near_copy):
            return None  # own_page_siblings
        # The same sentence with only a name swapped: the name is what the copies disagree on, not a scope.
        return Contradiction(near_copy[0], NAME_SWAP_CONFIDENCE, near_copy[1], near_copy[2], a, b)
    if _template_siblings(a, b):
        return None
    places = two_places(a, b, similarity=similarity, scope_a=scope_a, scope_b=scope_b)
    if places is not None:  # one thing kept in two named places: the names are what differs, not a scope
        return Contradiction("procedure", PLACE_STRENGTH, *places, a, b)
    if scopes_differ(scope_a, scope_b):
        return _tax_converted_contradiction(a, b, similarity, scope_a, scope_b)
    # Statements about different things ("Plan A is activated in the app" / "Plan B is switched on
    # by an engineer") can both hold; the value comparison checks each value's own subject instead.
    statements_apart = relation(statement_subject(a.claim.text), statement_subject(b.claim.text)) is Relation.DIFFERENT
    damping = 1.0
    if scope_a.has_exception or scope_b.has_exception:
        damping *= 0.8
    if scopes_uneven(scope_a, scope_b):
        damping *= 0.85
    if scope_a.tax != scope_b.tax and not (scope_a.tax_inherited or scope_b.tax_inherited):
        damping *= TAX_UNSAID_DAMPING
    found: list[Contradiction] = []
    overlap = len(a.content & b.content) / max(1, len(a.content | b.content))
    aligned_for_values = (similarity >= VALUE_MIN_SIMILARITY or near_copy is not None
                          or (similarity >= VALUE_MIN_SIMILARITY_WITH_OVERLAP and overlap >= VALUE_MIN_OVERLAP))
    loose_values = not aligned_for_values and similarity >= LOOSE_VALUE_MIN_SIMILARITY
    if not aligned_for_values and similarity >= AGE_MIN_SIMILARITY:
        ages_a, ages_b = [v for v in a.values if v.kind == AGE], [v for v in b.values if v.kind == AGE]
        if ages_a and ages_b:
            aligned_for_values = True
    if aligned_for_values or loose_values:
        hit = _value_contradiction(a, b, similarity, heads_must_match=loose_values)
        if hit is not None:
            kind, strength, said_a, said_b = hit
            ctype = VALUE_TYPE[kind]
            if kind == QUANTITY and POLICY_WORDS.search(a.claim.text + " " + b.claim.text):
                ctype = "policy"
            closeness = min(1.0, max(0.0, (similarity - VALUE_MIN_SIMILARITY_WITH_OVERLAP)
                                     / (1 - VALUE_MIN_SIMILARITY_WITH_OVERLAP)) + overlap)
            found.append(Contradiction(ctype, damping * strength * (0.55 + 0.45 * closeness), said_a, said_b, a, b))
    if near_copy is not None:
        ctype, said_a, said_b, _ = near_copy
        found.append(Contradiction(ctype, damping * 0.9, said_a, said_b, a, b))
    if not statements_apart and ((similarity >= POLARITY_MIN_SIMILARITY and overlap >= POLARITY_MIN_OVERLAP
                                  or _denies_what_other_affirms(a, b, similarity))
            and min(len(a.claim.text.split()), len(b.claim.text.split())) >= POLARITY_MIN_WORDS):
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
            close_denial = bool(shared - CHANNEL_WORDS) or bool(shared) and _one_action(a, b)
            opposite = (len(shared | (negative.denied_of & positive.content)) >= 2 or bool(shared & negative.denied_heads)
                        or close_denial and similarity >= POLARITY_CLOSE_SIMILARITY)
        if opposite and _agreeing_prices(a, b):
            opposite = False  # "free of charge" / "we don't charge": one price said two ways
        if opposite and a.negative != b.negative and _shared_threshold(a, b):
            # "until 24 hours before: can" / "less than 24 hours before: can no longer": a rule and its converse.
            opposite = False
        if opposite:
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
            found.append(Contradiction(ctype, damping * min(1.0, strength), a.claim.text, b.claim.text, a, b))
    closed_open = (scope_a.days_closed & (scope_b.days - scope_b.days_closed)) or (scope_b.days_closed & (scope_a.days - scope_a.days_closed))
    if (similarity >= CHANNEL_MIN_SIMILARITY and closed_open and _calendar_day(a) == _calendar_day(b) and any(v.kind == CLOCK for v in a.values + b.values)):
            found.append(Contradiction("hours", damping * 0.75, a.claim.text, b.claim.text, a, b))
    crossed = (a.channels_denied & b.channels_affirmed) | (b.channels_denied & a.channels_affirmed)
    if crossed and not statements_apart and (similarity >= CHANNEL_MIN_SIMILARITY and _one_action(a, b) or (
            similarity >= CROSSED_CHANNEL_MIN_SIMILARITY and _denied_action_affirmed(a, b))):
        found.append(Contradiction("procedure", damping * 0.8, a.claim.text, b.claim.text, a, b))
    origin = origin_against_any_place(a, b, similarity=similarity)
    if origin is not None and not statements_apart:  # "back to the branch that lent it" / "at any branch"
        found.append(Contradiction("procedure", damping * ORIGIN_STRENGTH, *origin, a, b))
    widened = widened_channels(a, b, similarity=similarity)
    if widened is not None and not statements_apart:  # "only at the office" / "by video or at either office"
        found.append(Contradiction("procedure", damping * RESTRICTION_STRENGTH, *widened, a, b))
    if (similarity >= CHANNEL_MIN_SIMILARITY and a.channels and b.channels and not a.channels & b.channels and not statements_apart
            and (scope_a.restricts or scope_b.restricts or "required" in (a.modality, b.modality))):
        found.append(Contradiction("procedure", damping * 0.75, ", ".join(sorted(a.channels)).replace("_", " "),
                                   ", ".join(sorted(b.channels)).replace("_", " "), a, b))
    return max(found, key=lambda c: c.confidence, default=None)


def _one_transposition(x: str, y: str) -> bool:
    """Equal but for two neighbouring characters swapped (0147 / 0174): the typo of a careless copy."""
    if len(x) != len(y) or x == y:
        return False
    diff = [i for i in range(len(x)) if x[i] != y[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]]


def transposed_contact(claims_a: list[ClaimFacts], claims_b: list[ClaimFacts]) -> Contradiction | None:
    """A phone number in one article that is another article's number with two digits swapped: one of the
    two is a mistyped copy, wherever in the articles they stand."""
    for a in claims_a:
        for x in (v for v in a.values if v.kind == PHONE):
            for b in claims_b:
                for y in (v for v in b.values if v.kind == PHONE):
                    if _one_transposition(x.key[0], y.key[0]):
                        return Contradiction("contact", 0.85, x.text, y.text, a, b)
    return None


SUBJECT_PASS_MIN_SIMILARITY = 0.35  # claims this far apart in wording can still price one named thing
SUBJECT_PASS_MIN_SHARED = 2
SUBJECT_PASS_CONFIDENCE = 0.6


def _page_subject(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """What a price is of; a bare noun ("the course") on a page titled after one thing is that thing."""
    subject = _subject(facts, value) or frozenset()
    if facts.claim.label or len(subject) != 1:
        return subject  # a claim that names nothing ("that's €20 a day") is not the page's headline price
    title = facts.claim.context.split(" \u2014 ", 1)[0]
    if title.rstrip().endswith("?") or statement_subject(title) is not None:
        return subject  # a question or a sentence names no one thing
    return phrase_stems(title) or subject


def same_subject_prices(claims_a, claims_b, similarity, scopes_a, scopes_b) -> Contradiction | None:
    """Prices of one named thing in claims worded too differently to align ("| Evening class | $40 |" and "The
    course costs $35" on a page titled "Evening class"): same currency and period, the same subject of at least
    two words, scopes that do not differ."""
    def prices(facts: ClaimFacts) -> list[Value]:
        return [v for v in facts.values if v.kind == MONEY and v.key[0] != "*" and v.role == "amount"]

    priced_b = [(j, b, prices(b)) for j, b in enumerate(claims_b) if prices(b)]
    best = None
    for i, a in enumerate(claims_a):
        prices_a = prices(a)
        if not prices_a:
            continue
        for j, b, prices_b in priced_b:
            if similarity[i, j] < SUBJECT_PASS_MIN_SIMILARITY or scopes_differ(scopes_a[i], scopes_b[j]):
                continue
            for x in prices_a:
                for y in prices_b:
                    if not comparable(x, y) or equal_values(x, y) or any(z.kind == MONEY and equal_values(x, z) for z in b.values):
                        continue
                    subject_x, subject_y = _page_subject(a, x), _page_subject(b, y)
                    if len(subject_x & subject_y) < SUBJECT_PASS_MIN_SHARED or relation(subject_x, subject_y) is not Relation.SAME:
                        continue
                    damping = 0.85 if scopes_uneven(scopes_a[i], scopes_b[j]) else 1.0
                    found = Contradiction("price", SUBJECT_PASS_CONFIDENCE * damping, x.text, y.text, a, b)
                    if best is None or found.confidence > best.confidence:
                        best = found
    return best


NAMED_CONTACT_CONFIDENCE = 0.6


def named_contacts(claims_a, claims_b, scopes_a, scopes_b, *, known_names: frozenset[str]) -> Contradiction | None:
    """Two phone numbers given for one named place or service, in claims worded too differently to align ("… ring
    Elm Yard on <number>" / "Elm Yard: <another number>"): each claim names the same names of the knowledge base's
    own (a branch, a service; not the business's name) and nothing else, the words next to each number name no
    other purpose ("Elm Yard travel clinic: <number>" is another line), neither claim gives the other's number, and
    their scopes do not differ. Not e-mail addresses: a business keeps one per purpose, often without saying which."""
    def phones(facts: ClaimFacts) -> list[Value]:
        return [v for v in facts.values if v.kind == PHONE]

    def names(facts: ClaimFacts) -> frozenset[str]:
        return frozenset(proper_names(facts.claim.text, first_words=True) & known_names)

    def purpose(facts: ClaimFacts, value: Value) -> frozenset[str]:
        return _own_head(facts, value) - content_stems(" ".join(names(facts)))

    def named(claims) -> list[tuple[int, ClaimFacts, list[Value], frozenset[str]]]:
        return [(i, f, phones(f), names(f)) for i, f in enumerate(claims) if phones(f) and names(f)]

    named_b = named(claims_b)
    for i, a, phones_a, names_a in named(claims_a):
        for j, b, phones_b, names_b in named_b:
            if names_b != names_a or scopes_differ(scopes_a[i], scopes_b[j]):
                continue
            if any(equal_values(x, y) for x in phones_a for y in phones_b):
                continue  # one number both give: the other is another line, not a contradiction
            for x in phones_a:
                for y in phones_b:
                    if purpose(a, x) == purpose(b, y):
                        return Contradiction("contact", NAMED_CONTACT_CONFIDENCE, x.text, y.text, a, b)
    return None


def announced_changes(claims_a, claims_b, similarity, scopes_a, scopes_b) -> Contradiction | None:
    """Claims that announce a change ("… has moved") against what the other article states of that thing,
    looked for beyond the alignment floor: the announcement is worded unlike the statement it makes old."""
    announcing_a = [i for i, a in enumerate(claims_a) if _announces_change(a.claim.text)]
    announcing_b = [j for j, b in enumerate(claims_b) if _announces_change(b.claim.text)]
    pairs = {(i, j) for i in announcing_a for j in range(len(claims_b))}
    pairs |= {(i, j) for j in announcing_b for i in range(len(claims_a))}
    best = None
    for i, j in sorted(pairs):
        if scopes_differ(scopes_a[i], scopes_b[j]):
            continue
        moved = _announced_change(claims_a[i], claims_b[j], float(similarity[i, j]))
        if moved is not None:
            damping = 0.85 if scopes_uneven(scopes_a[i], scopes_b[j]) else 1.0
            found = Contradiction("procedure", damping * ANNOUNCED_CHANGE_STRENGTH, *moved, claims_a[i], claims_b[j])
            if best is None or found.confidence > best.confidence:
                best = found
    return best

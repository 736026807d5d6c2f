"""Values that cannot both hold: two values of one kind about one thing (its subject and head words decide
that), ages, unlimited against a limit, clock hours by day."""
from __future__ import annotations

import functools
import re

from .analysis import ClaimFacts, content_stems, shared_stems, stem
from .contradiction import AlignedPair, Finding
from .scope import DAYS, days_in, mentions, proper_names
from .subject import Relation, phrase_stems, relation
from .values import (
    AGE,
    CLOCK,
    COUNT,
    DATE,
    EMAIL,
    FREE_PRICE_RE,
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
ADDRESS_MIN_SIMILARITY = 0.75
NARROWER_SUBJECT_STRENGTH = 0.7
UNKNOWN_SUBJECT_STRENGTH = 0.8  # loosely aligned claims whose subjects cannot be compared  # "a replacement card costs €5" / "the card costs €12": likelier two prices
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


def own_head(facts: ClaimFacts, value: Value) -> frozenset[str]:
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
    return own_head(facts, value) or _head_words(facts.claim.context.rsplit("\u2014", 1)[-1])


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
    names = name_stems(a, b)
    clause_x, clause_y = _clause_words(a, x) - names, _clause_words(b, y) - names
    # What one period is next to must be in the other's clause: "refunds reach your account within 5 days" and
    # "30 days from delivery to return unworn shoes" share the shoes and the returning, not what the 5 days are.
    named = shared_stems(own_head(a, x), clause_y) or shared_stems(own_head(b, y), clause_x)
    return bool(named) and len(shared_stems(clause_x, clause_y)) >= DURATION_SHARED_WORDS


def _periods_named_apart(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    """Two periods each named by its own words, which the other claim does not use ("a minimum term of 24 months" /
    "give us 60 days notice"): one policy states several (a term, a notice period, a returns window), so claims
    about one product read alike whichever period they give."""
    if not all(v.kind == QUANTITY and v.unit == "[time]" for v in (x, y)):
        return False
    head_x, head_y = own_head(a, x), own_head(b, y)
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
    if similarity >= STRONG_SIMILARITY or subject_relation(a, x, b, y) is Relation.SAME:
        return True
    head_x, head_y = _head(a, x), _head(b, y)
    if head_x & head_y or _durations_of_one_thing(a, x, b, y):
        return True
    # Nothing in one claim names what its value is of (a heading may, but pages head the same facts
    # differently: "Opening hours" / "Find us"): the sentences must say it.
    if not own_head(a, x) or not own_head(b, y):
        return similarity >= UNNAMED_VALUE_MIN_SIMILARITY
    return False


ALLOWANCE_BEFORE_RE = re.compile(r"\b(?:up to|maximum(?: of)?|max\.?|no more than|at most|limit(?:ed)? (?:of|to)|"
                                 r"includes?|included|allowance of|capped at)\s*$", re.I)


def _is_allowance(facts: ClaimFacts, value: Value) -> bool:
    """An amount given per period ("150 miles a day") or as a bound ("up to 4 visits"): what "unlimited" denies.
    A bare length ("a session (60 minutes)") is no limit."""
    return bool(value.key[2]) or bool(ALLOWANCE_BEFORE_RE.search(facts.claim.text[:value.start]))


def unlimited_contradiction(a: ClaimFacts, b: ClaimFacts) -> tuple[str, float, str, str] | None:
    """"unlimited mileage" against "150 miles a day": a limit one side denies."""
    for first, second, flip in ((a, b, False), (b, a, True)):
        unlimited = [v for v in first.values if v.kind == UNLIMITED]
        limits = [v for v in second.values if v.kind in (QUANTITY, COUNT) and v.role == "amount" and _is_allowance(second, v)
                  and (not unlimited or subject_relation(first, unlimited[0], second, v) is not Relation.DIFFERENT)]
        if unlimited and limits and not any(v.kind == UNLIMITED for v in second.values):
            said = (unlimited[0].text, values_said(limits))
            return (UNLIMITED, 0.8, *(said[::-1] if flip else said))
    return None


# Words that finish saying an age ("18 years old", "16 or over"), not what those of that age get.
AGE_PHRASE_WORDS = frozenset({stem(w) for w in "year years old older over under younger above below plus upwards aged".split()})


def _said_after(facts: ClaimFacts, value: Value) -> str:
    """The rest of the value's clause: what a claim says of those of an age ("go free")."""
    return HEAD_BREAK_RE.split(facts.claim.text[value.end:])[0]


def _granted(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """The content words of what a claim says of those of an age."""
    return content_stems(_said_after(facts, value)) - AGE_PHRASE_WORDS


# What an age limit grants, where the words say it: nothing to pay, or a price of its own. Two limits granting the
# same kind are one rule said in other words ("go free" / "ride at no cost"), whatever words they share.
EXEMPT_RE = re.compile(r"\b(?:exempt|gratis|no (?:fee|fare)|nothing)\b", re.I)  # beside FREE_PRICE_RE
A_PRICE_RE = re.compile(r"\b(?:pay|pays|paying|half|reduced|discount(?:ed)?|concession(?:ary)?|junior|rate|fare|price)\b",
                        re.I)


def _granted_kind(facts: ClaimFacts, value: Value) -> str | None:
    said = _said_after(facts, value)
    if FREE_PRICE_RE.search(said) or EXEMPT_RE.search(said):
        return "nothing to pay"
    return "a price" if A_PRICE_RE.search(said) else None


def _granted_apart(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    """Both claims say what those of their age get, in words with nothing in common, and not the same kind of thing."""
    granted_x, granted_y = _granted(a, x), _granted(b, y)
    if not granted_x or not granted_y or shared_stems(granted_x, granted_y):
        return False
    kind = _granted_kind(a, x)
    return kind is None or kind != _granted_kind(b, y)


def _named_same_thing(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> bool:
    return bool(_head(a, x) & _head(b, y))


def value_contradiction(a: ClaimFacts, b: ClaimFacts, similarity: float, *, heads_must_match: bool = False,
                         names: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
                         ) -> tuple[str, float, str, str] | None:
    """Values of one kind that cannot both hold. With `heads_must_match` (loosely aligned claims) only
    values whose neighbouring words name the same thing count ("within 48 hours of delivery" /
    "within 3 days of your delivery"). `names`: the set's known names each claim uses (its scope's)."""
    best = None if heads_must_match else unlimited_contradiction(a, b)
    for kind in sorted({v.kind for v in a.values} & {v.kind for v in b.values}):
        if kind == CLOCK and calendar_day(a) != calendar_day(b):
            continue  # hours on one particular day (31 December) are an exception to the usual ones
        if kind == MONEY and _bundle_differs(a, b):
            continue  # "5 sessions: £160" and "a single session costs £31.50" price different things
        if kind in (EMAIL, URL) and similarity < ADDRESS_MIN_SIMILARITY:
            continue  # a business has an address per purpose (bookings, lost property): only one purpose counts
        mine = [v for v in a.values if v.kind == kind]
        theirs = [v for v in b.values if v.kind == kind]
        def subject(x: Value, y: Value) -> bool:
            if kind == AGE:
                # An age limit is said of whoever is admitted (audiences are compared as scope), but only limits
                # for one thing conflict: "pupils under 4 go free" / "pupils under 13 pay the junior rate" are two rules.
                return not _granted_apart(a, x, b, y)
            if subject_relation(a, x, b, y) is Relation.DIFFERENT or _values_named_apart(a, x, b, y, names):
                return False
            if kind == CLOCK and _value_days(a, x) and _value_days(b, y) and not _value_days(a, x) & _value_days(b, y):
                return False  # "weekdays 09:00-16:00 and all day at weekends" / "Saturday: 08:00-20:00"
            if heads_must_match:
                return _named_same_thing(a, x, b, y) or subject_relation(a, x, b, y) is Relation.SAME
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
        relations = {subject_relation(a, x, b, y) for x, y in pairs
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
            best = (kind, strength, values_said(open_mine), values_said(open_theirs))
    return best


def _segment_span(facts: ClaimFacts, value: Value) -> tuple[int, int]:
    """Where the stretch of the claim that holds the value starts and ends: its clause, or its item of a list."""
    text = facts.claim.text
    starts = [m.end() for m in VALUE_SEGMENT_RE.finditer(text, 0, value.start)]
    end = VALUE_SEGMENT_RE.search(text, value.end)
    return starts[-1] if starts else 0, end.start() if end else len(text)


def _segment(facts: ClaimFacts, value: Value) -> str:
    start, end = _segment_span(facts, value)
    return facts.claim.text[start:end]


def _values_named_apart(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value,
                        names: tuple[frozenset[str], frozenset[str]]) -> bool:
    """Each value's own stretch names a thing (a place, a vessel, a branch) that the other claim, heading included,
    never mentions ("40 minutes to North Point, 25 to Elm Quay" / "the crossing to Harbour takes 2 hours on the
    Seabird"): two values of two things. One side naming a thing the other does not is a page about it against a
    general one, still compared."""
    named_x = proper_names(_segment(a, x)) & names[0]
    named_y = proper_names(_segment(b, y)) & names[1]
    return (any(not mentions(b.claim.with_heading, n) for n in named_x)
            and any(not mentions(a.claim.with_heading, n) for n in named_y))


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
    segment_start, segment_end = _segment_span(facts, value)
    # "Open seven days a week: Monday to Saturday from 10 am": the days after the last colon are the value's own.
    label_end = text.rfind(":", segment_start, value.start)
    if label_end >= 0 and days_in(text[label_end + 1:segment_end]):
        segment_start = label_end + 1
    return days_in(text[segment_start:segment_end])


def subject_relation(a: ClaimFacts, x: Value, b: ClaimFacts, y: Value) -> Relation:
    subject_a, subject_b = value_subject(a, x), value_subject(b, y)
    found = relation(subject_a, subject_b)
    if found is Relation.DIFFERENT and _named_in(subject_a - subject_b, b) and _named_in(subject_b - subject_a, a):
        # "Parking at the North Gate (car park 2)" / "Car park 2 (North Gate)": each claim names the other's words
        # for the thing too, so the subjects are one thing said two ways.
        return Relation.SAME
    if found is Relation.NARROWER and relation(value_subject(a, x, as_said=True), value_subject(b, y, as_said=True)) is Relation.SAME:
        # "the shuttle" on a page titled "Hotel shuttle" and "our shuttle" elsewhere: only the title made one narrower.
        found = Relation.SAME
    if found is Relation.NARROWER and _page_of_the_narrower_case(a, subject_a, b, subject_b):
        return Relation.DIFFERENT
    if found is Relation.SAME and len(subject_a) == 1:
        # "The card costs €12" / "The card is free": a bare noun is the one its article's title names.
        title_a, title_b = (phrase_stems(f.claim.context.split(" \u2014 ", 1)[0]) for f in (a, b))
        if subject_a <= title_a and subject_a <= title_b and relation(title_a, title_b) is Relation.DIFFERENT:
            return Relation.DIFFERENT
    return found


def _page_of_the_narrower_case(a: ClaimFacts, subject_a: frozenset[str], b: ClaimFacts, subject_b: frozenset[str]) -> bool:
    """The narrower subject's own words are what its heading is about, and not the other's ("every billing
    dispute … within 15 days" under "Billing disputes policy" / "we answer within 3 days" under "Get in touch"): a page
    about that case, whose figure is the case's own, not a second figure for the general one."""
    narrow, wide, narrow_subject, wide_subject = (a, b, subject_a, subject_b) if subject_a > subject_b else (b, a, subject_b, subject_a)
    extra = narrow_subject - wide_subject
    return (bool(phrase_stems(narrow.claim.context) & extra) and not phrase_stems(wide.claim.context) & extra)


def _named_in(words: frozenset[str], facts: ClaimFacts) -> bool:
    return words <= phrase_stems(facts.claim.text)


def value_subject(facts: ClaimFacts, value: Value, *, as_said: bool = False) -> frozenset[str] | None:
    subjects = facts.said_subjects if as_said else facts.subjects
    return next((subject for other, subject in zip(facts.values, subjects) if other is value), None)


def name_stems(a: ClaimFacts, b: ClaimFacts) -> frozenset[str]:
    """The stems of the names either claim uses (capitalised inside its sentence: products, plans, places)."""
    return frozenset(stem(w.lower()) for text in (a.claim.text, b.claim.text)
                     for w in proper_names(text) | set(ACRONYM_RE.findall(text)))


def _bundle_differs(a: ClaimFacts, b: ClaimFacts) -> bool:
    amounts_a = [v for v in a.values if v.kind in (QUANTITY, COUNT)]
    amounts_b = [v for v in b.values if v.kind in (QUANTITY, COUNT)]
    return any(comparable(x, y, strict_period=False) and not equal_values(x, y) for x in amounts_a for y in amounts_b)


def calendar_day(facts: ClaimFacts) -> bool:
    return any(v.kind == DATE and v.key[2] for v in facts.values)


def values_said(values: list[Value]) -> str:
    return " / ".join(dict.fromkeys(v.text for v in values))


TAX_UNSAID_DAMPING = 0.85  # "$40 plus tax" against a price that does not say: likely before tax, not sure


VALUE_MIN_OVERLAP = 0.25
LOOSE_VALUE_MIN_SIMILARITY = 0.5  # values named by the same words, in claims only loosely aligned
AGE_MIN_SIMILARITY = 0.5  # ages are specific enough to compare in claims that are only loosely aligned
POLICY_WORDS = re.compile(r"\b(?:return|refund|cancel|notice|deadline|within|before|after|claim|report|exchange|"
                          r"appeal|warranty|guarantee|trial|grace|expire|valid)\w*", re.I)
VALUE_TYPE = {UNLIMITED: "quantity", MONEY: "price", PERCENT: "price", CLOCK: "hours", PHONE: "contact", EMAIL: "contact", URL: "contact",
              DATE: "date", AGE: "eligibility", QUANTITY: "quantity", COUNT: "quantity"}


def value_finding(p: AlignedPair) -> Finding | None:
    """Two values of one kind that cannot both hold, in claims aligned closely enough to compare values (or
    loosely, when the values are named by the same words; ages whenever both claims give one)."""
    a, b, similarity, overlap = p.a, p.b, p.similarity, p.overlap
    aligned_for_values = (similarity >= VALUE_MIN_SIMILARITY or p.near_copy is not None
                          or (similarity >= VALUE_MIN_SIMILARITY_WITH_OVERLAP and overlap >= VALUE_MIN_OVERLAP))
    loose_values = not aligned_for_values and similarity >= LOOSE_VALUE_MIN_SIMILARITY
    if not aligned_for_values and similarity >= AGE_MIN_SIMILARITY:
        ages_a, ages_b = [v for v in a.values if v.kind == AGE], [v for v in b.values if v.kind == AGE]
        if ages_a and ages_b:
            aligned_for_values = True
    if not (aligned_for_values or loose_values):
        return None
    hit = value_contradiction(a, b, similarity, heads_must_match=loose_values, names=(p.scope_a.names, p.scope_b.names))
    if hit is None:
        return None
    kind, strength, said_a, said_b = hit
    ctype = VALUE_TYPE[kind]
    if kind == QUANTITY and POLICY_WORDS.search(a.claim.text + " " + b.claim.text):
        ctype = "policy"
    closeness = min(1.0, max(0.0, (similarity - VALUE_MIN_SIMILARITY_WITH_OVERLAP)
                             / (1 - VALUE_MIN_SIMILARITY_WITH_OVERLAP)) + overlap)
    return ctype, strength * (0.55 + 0.45 * closeness), said_a, said_b

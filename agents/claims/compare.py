"""Decide whether two facts from different articles are about the same attribute and cannot both hold."""
from __future__ import annotations

import datetime as dt

from .facts import Fact
from .schedule import describe
from .scope import audience, audiences_compatible, names_compatible, strong_topic
from .text import content_tokens, overlap

MIN_TOPIC_OVERLAP = 0.5
RECURRING_DAYS = 300
APPROX_TOLERANCE = 0.25  # "about 3 days" agrees with anything within 25%


def names_clash(a: frozenset, b: frozenset) -> bool:
    """Each side names something the other does not ("Fibre 500" vs "Fibre 1000", "Kingsgate" vs "Market Street")."""
    return bool(a - b) and bool(b - a)


def _name_words(names: frozenset) -> set:
    return {w for n in names for w in content_tokens(n, drop_generic=False)}


def _scope_differs(a: Fact, b: Fact, vocab_a: frozenset, vocab_b: frozenset) -> bool:
    if a.past or b.past or a.holiday != b.holiday:
        return True
    if a.months and b.months and not (a.months & b.months):
        return True
    if (vocab_a or vocab_b) and a.kind in ("money", "percent", "count", "duration"):
        return not names_compatible(a.names, b.names, vocab_a=vocab_a, vocab_b=vocab_b)
    return names_clash(a.names, b.names)


def same_subject(a: Fact, b: Fact, *, vocab_a: frozenset = frozenset(), vocab_b: frozenset = frozenset()) -> float:
    """0 when the facts are about different things, audiences or times; otherwise how well their subjects match."""
    if _scope_differs(a, b, vocab_a, vocab_b):
        return 0.0
    if a.kind == "schedule":
        if a.phones and b.phones:
            return 1.0 if a.phones & b.phones else 0.0
        if a.names and b.names:
            return 0.8 if a.names & b.names else 0.0  # the branch or practice named on both sides
    if a.kind == "date":
        return 1.0 if a.names & b.names else 0.0  # event dates are about a named sale, plan, product
    if a.kind in ("phone", "email", "url") and not a.topic and not b.topic:
        return 0.6  # both are the general contact line
    # An age states its own audience ("adults aged 18 and over"); other values are limited by theirs.
    if a.kind != "age" and not audiences_compatible(audience(a.topic), audience(b.topic)):
        return 0.0
    if a.kind in ("phone", "email", "url"):
        # What a contact line is for ("the date, the route and a description of the item") is its subject.
        strong_a, strong_b = a.topic - _name_words(a.names), b.topic - _name_words(b.names)
    else:
        strong_a, strong_b = strong_topic(a.topic, a.names), strong_topic(b.topic, b.names)
    common_names = a.names & b.names
    if a.kind == "count" and "/" in a.unit and a.unit == b.unit and not (strong_a - strong_b or strong_b - strong_a):
        return 0.8  # "up to N bicycles per booking": the allowance names its own subject
    if common_names and (not strong_a or not strong_b):
        # One side says nothing but the name ("Fibre 500 - EUR 36.90", "Route A - B: Flex EUR 14.50"): the shared
        # name is the subject, unless a side also names something the other article never mentions.
        if len(strong_a | strong_b) > 2:
            return 0.0
        return 0.5 if names_compatible(a.names, b.names, vocab_a=vocab_a, vocab_b=vocab_b) else 0.0
    shared = len(strong_a & strong_b) + len(common_names)
    # One shared word is enough only when it is all both sides say ("E-bike: EUR 48" / "E-bikes are EUR 42"),
    # or, for a contact line, all one side says ("faults line on ..." / "Faults and outages: ...").
    single_ok = strong_a == strong_b or (a.kind in ("phone", "email", "url") and min(len(strong_a), len(strong_b)) == 1)
    if shared < 2 and not single_ok:
        return 0.0
    score = overlap(set(strong_a) | common_names, set(strong_b) | common_names)
    return score if score >= MIN_TOPIC_OVERLAP else 0.0


def _intervals_disjoint(a: tuple, b: tuple, *, approx: bool) -> bool:
    lo_a, hi_a = a
    lo_b, hi_b = b
    if approx:
        lo_a, hi_a = lo_a * (1 - APPROX_TOLERANCE), hi_a * (1 + APPROX_TOLERANCE)
    return hi_a < lo_b or hi_b < lo_a


def values_conflict(a: Fact, b: Fact) -> str | None:
    """A short description of the disagreement, or None when both values can hold."""
    if a.kind == "schedule":
        sa, sb = dict(a.value), dict(b.value)
        for day in sorted(set(sa) & set(sb)):
            if sa[day] != sb[day]:
                return f"{describe(sa, day)} vs {describe(sb, day)}"
        return None
    if a.unit != b.unit:
        ua, _, pa = a.unit.partition("/")
        ub, _, pb = b.unit.partition("/")
        if ua != ub or (pa and pb and pa != pb):
            return None
    if a.kind == "count" and a.bound == b.bound == "max" and "/" in a.unit and a.unit == b.unit:
        # Two different limits on the same allowance ("up to 6 bikes per booking" / "up to 4 bikes per booking").
        return f"{a.display} vs {b.display}" if a.value != b.value else None
    if a.kind in ("money", "count", "percent"):
        if a.bound or b.bound or a.approx or b.approx:
            return None
        return f"{a.display} vs {b.display}" if abs(a.value - b.value) > 0.005 else None
    if a.kind == "duration":
        if {a.bound, b.bound} & {"min", "max"} and a.bound != b.bound:
            return None  # "at least 7 days" and "valid for 12 months" are different kinds of claim
        if a.bound == "range" and b.bound == "range":
            return None if not _intervals_disjoint(a.value, b.value, approx=False) else f"{a.display} vs {b.display}"
        approx = a.approx or b.approx
        disjoint = _intervals_disjoint(a.value, b.value, approx=approx) and _intervals_disjoint(b.value, a.value, approx=approx)
        return f"{a.display} vs {b.display}" if disjoint else None
    if a.kind == "age":
        return f"{a.display} vs {b.display}" if a.bound == b.bound and a.value != b.value else None
    if a.kind == "date":
        if a.unit != b.unit or a.value == b.value:
            return None
        # Nearly a year apart: this year's and next year's occurrence of a recurring event, not a moved date.
        if isinstance(a.value, dt.date) and isinstance(b.value, dt.date) and abs((a.value - b.value).days) > RECURRING_DAYS:
            return None
        return f"{a.display} vs {b.display}"
    if a.kind in ("phone", "email", "url"):
        return f"{a.display} vs {b.display}" if a.value != b.value else None
    return None


def _agreeing_match(fact: Fact, others: list[Fact], score: float, scores: dict) -> bool:
    """The other article states the same value for a subject at least as close: the fact agrees with it,
    and a different value there is about a neighbouring case ("45 min for campervans" vs "30 min for cars")."""
    for other in others:
        if other.kind == fact.kind and not other.past and other.unit == fact.unit and other.value == fact.value \
                and scores.get(id(other), 0.0) >= score:
            return True
    return False


def best_conflict(facts_a: list[Fact], facts_b: list[Fact], *, vocab_a: frozenset = frozenset(),
                  vocab_b: frozenset = frozenset()) -> tuple[Fact, Fact, str] | None:
    """The best-matching contradictory pair of facts between two articles, if any."""
    values_a = {(f.kind, f.value) for f in facts_a if not f.past}
    values_b = {(f.kind, f.value) for f in facts_b if not f.past}
    scores = {}
    for fa in facts_a:
        for fb in facts_b:
            if fa.kind == fb.kind:
                scores[id(fa), id(fb)] = same_subject(fa, fb, vocab_a=vocab_a, vocab_b=vocab_b)
    best = None
    for fa in facts_a:
        for fb in facts_b:
            score = scores.get((id(fa), id(fb)), 0.0)
            if not score:
                continue
            # A contact value the other article also lists is a different line, not a changed one.
            if fa.kind in ("phone", "email", "url") and ((fb.kind, fb.value) in values_a or (fa.kind, fa.value) in values_b):
                continue
            what = values_conflict(fa, fb)
            if what is None:
                continue
            if _agreeing_match(fa, facts_b, score, {id(o): scores.get((id(fa), id(o)), 0.0) for o in facts_b}) or \
                    _agreeing_match(fb, facts_a, score, {id(o): scores.get((id(o), id(fb)), 0.0) for o in facts_a}):
                continue
            key = (score, -fa.sentence.start, -fb.sentence.start)
            if best is None or key > best[0]:
                best = (key, fa, fb, what)
    return None if best is None else best[1:]

"""MACR rules: the Rule record and the executable templates evaluated in code.

A rule is ⟨Type, Condition, Resolution⟩ (the MACR paper's triple) plus where it came from and how it
is applied. *Executable* rules carry code (`applies`, `resolve`) over article metadata and text;
*textual* rules carry only words and need an LLM to apply them (not built here).

Priority (lower number = consulted first) encodes specificity, as in "the specific rule beats the
general one". The general rule "the more recent date wins" is right most of the time and is fooled
exactly when a page is edited for another reason and keeps a stale copy of an old value; the rules
above it exist to catch the situations where the general rule is known to fail, so they must
override it rather than be outvoted by it:

10 explicit-past-statement-loses   the conflicting statement itself says it is no longer current
10 not-yet-in-force-statement-loses   ... or that it only takes effect later (same level: if one
                                    side is past and the other future, neither is current → abstain)
20 official-effective-beats-newer-page   an official document in force from an explicit date beats a
                                    web/faq page on the same subject that gives no date of its own and
                                    was written soon after it took effect (careless copy)
30 explicit-effective-date-wins    a date the text gives ("as of 1 October 2025") beats a bare
                                    `updated_at`, which may reflect an unrelated edit
40 newer-content-date-wins         otherwise, the more recently updated article wins

The date rules know their limits: they give no verdict where being newer is no evidence: dates under
two weeks apart, a side announcing a change not yet in force, an older side whose own words say for
which period it holds (not over yet), or a possible careless copy (an undated page written soon after
an official document took effect, whether or not the statements are known to share a subject).

The reasoner decides with the first priority level at which some rule gives a winner; rules at the
same level that disagree make it abstain (see reasoner.py).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agents.macr.dates import (
    announces_future_change_only,
    effective_dates,
    end_dates,
    in_force_effective_date,
    period_not_over,
)
from agents.types import ArticleText, pair_key

ANY_TYPE = "*"
ORIGINS = ("executable", "induced", "manual")
KINDS = ("executable", "textual")


@dataclass(frozen=True)
class ConflictPair:
    """The two sides of one conflict as rules see them: articles, conflict type, snippets by ref."""

    a: ArticleText
    b: ArticleText
    type: str = "other"
    snippets: Mapping[str, str] = field(default_factory=dict)
    # When each side's conflicting statement was written, where the article's history tells (the first
    # version of the unbroken run that carries the sentence); a page edited since for another reason
    # keeps its statement's older date. Sides missing here fall back to the page's `updated_at`.
    statement_dates: Mapping[str, dt.date] = field(default_factory=dict)

    @property
    def refs(self) -> tuple[str, str]:
        return pair_key(self.a.ref, self.b.ref)

    @property
    def articles(self) -> tuple[ArticleText, ArticleText]:
        return (self.a, self.b)

    def other(self, article: ArticleText) -> ArticleText:
        return self.b if article.ref == self.a.ref else self.a

    def statement_date(self, article: ArticleText) -> dt.date | None:
        """The date the side's conflicting statement holds from, as far as the data tells."""
        return self.statement_dates.get(article.ref) or article.updated_at


PairCheck = Callable[[ConflictPair, dt.date], bool]
PairDecision = Callable[[ConflictPair, dt.date], "str | None"]
PairReason = Callable[[ConflictPair, dt.date], str]


@dataclass(frozen=True)
class Rule:
    """One rule. `condition` and `resolution` are the words shown on the Rules page; executable rules
    also carry the code that evaluates them (`applies` / `resolve` call it)."""

    id: str
    type: str  # a conflict type, or "*" for every type
    condition: str
    resolution: str
    origin: str = "executable"  # executable | induced | manual
    kind: str = "executable"  # executable | textual
    priority: int = 50
    coverage: float | None = None  # from the Observer's last validation, when there was one
    support: float | None = None
    validated_cases: int = 0  # covered decisions of that validation (support = validated_agreed / validated_cases)
    validated_agreed: int = 0
    # the same counts split by the standing of the two sides where the rule named a side (calibration.py)
    validated_by_standing: Mapping[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    condition_check: PairCheck | None = field(default=None, compare=False, repr=False)
    resolution_pick: PairDecision | None = field(default=None, compare=False, repr=False)
    reason: PairReason | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"rule {self.id}: origin must be one of {ORIGINS}, not {self.origin!r}")
        if self.kind not in KINDS:
            raise ValueError(f"rule {self.id}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.kind == "executable" and (self.condition_check is None or self.resolution_pick is None):
            raise ValueError(f"rule {self.id}: an executable rule needs condition_check and resolution_pick")

    @property
    def is_executable(self) -> bool:
        return self.kind == "executable"

    def matches_type(self, conflict_type: str) -> bool:
        return self.type == ANY_TYPE or self.type == conflict_type

    def applies(self, pair: ConflictPair, now: dt.date) -> bool:
        """Type and Condition hold (textual rules cannot be evaluated in code: never)."""
        if not self.is_executable or not self.matches_type(pair.type):
            return False
        return bool(self.condition_check(pair, now))

    def resolve(self, pair: ConflictPair, now: dt.date) -> str | None:
        """The winning ref by this rule's Resolution, or None when it cannot tell."""
        if not self.applies(pair, now):
            return None
        winner = self.resolution_pick(pair, now)
        return winner if winner in pair.refs else None

    def because(self, pair: ConflictPair, now: dt.date) -> str:
        """Why the rule decided as it did on this pair, in words for the reviewer."""
        if self.reason is not None:
            return self.reason(pair, now)
        return self.resolution

    def with_stats(
        self, *, coverage: float, support: float, cases: int = 0, agreed: int = 0,
        by_standing: Mapping[str, tuple[int, int]] | None = None,
    ) -> "Rule":
        return dataclasses.replace(
            self, coverage=coverage, support=support, validated_cases=cases, validated_agreed=agreed,
            validated_by_standing={k: (int(v[0]), int(v[1])) for k, v in (by_standing or {}).items()},
        )


# --- facts about one article that the rules share --------------------------------------------

_OFFICIAL_TITLE = re.compile(r"\b(?:polic(?:y|ies)|terms|conditions)\b", re.IGNORECASE)


def is_official_document(article: ArticleText) -> bool:
    """A PDF, or a page titled as a policy / terms: documents a business issues deliberately."""
    return article.source == "pdf" or bool(_OFFICIAL_TITLE.search(article.title))


def full_text(article: ArticleText) -> str:
    # Titles often carry the effective date ("Price List (valid from 1 February 2026)").
    return f"{article.title}\n{article.body}"


def explicit_effective_date(article: ArticleText, now: dt.date) -> dt.date | None:
    return in_force_effective_date(full_text(article), now=now)


def still_in_force(article: ArticleText, now: dt.date) -> bool:
    """False when the text ends its own validity: "until <date>" after its effective date, already past.

    An "until" before the effective date describes the previous state ("was $129 until 28 February")
    and does not end this document.
    """
    effective = explicit_effective_date(article, now)
    if effective is None:
        return True
    return not any(effective < end < now for end in end_dates(full_text(article)))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def statement_not_yet_in_force(pair: "ConflictPair", article: ArticleText, now: dt.date) -> bool:
    """Does this side's statement in conflict only take effect later?

    A title that takes effect later ("Conditions of entry (effective 1 May)") holds every statement of the
    document back. Otherwise: the statement known (its snippet), that sentence says so; unknown, every sentence
    of the page does, because a page announcing one change for later still vouches for everything else it says.
    """
    if announces_future_change_only(article.title, now=now):
        return True
    snippet = pair.snippets.get(article.ref)
    if snippet:
        return is_not_yet_in_force(snippet, now)
    sentences = [part for part in _SENTENCE_END.split(article.body) if part.strip()]
    return bool(sentences) and all(announces_future_change_only(part, now=now) for part in sentences)


def _fmt(date: dt.date | None) -> str:
    return date.isoformat() if date else "no date"


# Two statements written within this many days of each other are "the same date" for the date rules:
# pages edited in one session or one week cannot be ordered by which is current. Chosen on the dev half
# of kb-conflicts-broad (7 and 14 days give the same figures there; a month starts costing right answers).
MIN_DATE_GAP_DAYS = 14


def real_date_gap(first: dt.date | None, second: dt.date | None) -> bool:
    """Both dates known and at least MIN_DATE_GAP_DAYS apart."""
    return first is not None and second is not None and abs((first - second).days) >= MIN_DATE_GAP_DAYS


# Words that say what kind of document a title is, not what it is about.
_GENERIC_WORDS = frozenset(
    """a an and are as at be by can do does for from how i if in is it its of on or our the to we what when where
    which who why will with you your my me us not no yes any all new now more about after before this that these
    those there their they them than then also only just per each every page pages faq faqs questions question
    terms term conditions condition policy policies rules rule regulations guide handbook information info
    effective valid edition version updated update document documents general standard agreement contract
    service services customer customers help support contact january february march april may june july august
    september october november december include includes included including available allowed must should
    have has had get gets take takes make makes""".split()
)
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def _subject_words(text: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(text)}
    # a crude stem so "fares" meets "fare" and "pets" meets "pet"
    return {word[:-1] if word.endswith("s") and len(word) > 4 else word for word in words} - _GENERIC_WORDS


def same_subject(pair: ConflictPair) -> bool:
    """Do the two sides speak of one subject? Their conflicting statements share a content word when
    both are known; otherwise their titles do (a fee list and a printing page are not one subject)."""
    a_text, b_text = pair.snippets.get(pair.a.ref), pair.snippets.get(pair.b.ref)
    if a_text and b_text:
        return bool(_subject_words(a_text) & _subject_words(b_text))
    return bool(_subject_words(pair.a.title) & _subject_words(pair.b.title))


# --- explicit-past-statement-loses ----------------------------------------------------------

_PAST_MARKERS = re.compile(
    r"\b(?:previously|formerly|used\s+to|in\s+the\s+past|(?:was|were|had\s+been)\b[^.;]*\buntil)\b",
    re.IGNORECASE,
)


def is_explicitly_past(snippet: str, now: dt.date) -> bool:
    """The sentence itself says it describes the past ("until 2024", "previously", "we used to")."""
    if _PAST_MARKERS.search(snippet):
        return True
    return any(end < now for end in end_dates(snippet))


def _past_sides(pair: ConflictPair, now: dt.date) -> list[ArticleText] | None:
    if not all(pair.snippets.get(article.ref) for article in pair.articles):
        return None
    return [article for article in pair.articles if is_explicitly_past(pair.snippets[article.ref], now)]


def _past_applies(pair: ConflictPair, now: dt.date) -> bool:
    past = _past_sides(pair, now)
    return past is not None and len(past) == 1


def _past_resolve(pair: ConflictPair, now: dt.date) -> str | None:
    past = _past_sides(pair, now)
    return pair.other(past[0]).ref if past and len(past) == 1 else None


def _past_reason(pair: ConflictPair, now: dt.date) -> str:
    past = _past_sides(pair, now) or []
    if len(past) != 1:
        return "neither or both statements are marked as past"
    return f"{past[0].ref} states it as past (\"{pair.snippets[past[0].ref].strip()}\"), so {pair.other(past[0]).ref} is current"


# --- not-yet-in-force-statement-loses ---------------------------------------------------------

def is_not_yet_in_force(snippet: str, now: dt.date) -> bool:
    """The sentence itself says it takes effect later ("from 1 September 2026 the fare is €31")."""
    return any(date > now for date in effective_dates(snippet))


def _future_sides(pair: ConflictPair, now: dt.date) -> list[ArticleText] | None:
    if not all(pair.snippets.get(article.ref) for article in pair.articles):
        return None
    return [article for article in pair.articles if is_not_yet_in_force(pair.snippets[article.ref], now)]


def _future_applies(pair: ConflictPair, now: dt.date) -> bool:
    future = _future_sides(pair, now)
    return future is not None and len(future) == 1


def _future_resolve(pair: ConflictPair, now: dt.date) -> str | None:
    future = _future_sides(pair, now)
    return pair.other(future[0]).ref if future and len(future) == 1 else None


def _future_reason(pair: ConflictPair, now: dt.date) -> str:
    future = _future_sides(pair, now) or []
    if len(future) != 1:
        return "neither or both statements take effect later"
    return (f"{future[0].ref} states a change that takes effect later (\"{pair.snippets[future[0].ref].strip()}\"), "
            f"so {pair.other(future[0]).ref} is what holds today")


# --- official-effective-beats-newer-page -----------------------------------------------------

# A page that disagrees with an official document and was written within this many days after that document
# took effect most likely missed the change (a stale copy). Written much later, it may record a later decision
# the official document has not caught up with: the date cannot tell which. Chosen on the dev data: pages
# labelled stale copies were written 4 to 10 weeks after the change (one just outside this window), pages
# labelled later decisions mostly 3 to 9 months after (one at 5 weeks).
CARELESS_COPY_WINDOW_DAYS = 60


def possible_careless_copy(pair: ConflictPair, now: dt.date) -> ArticleText | None:
    """The official side, when the pair looks like a careless copy: one side an official document in force
    from an explicit date, the other an unofficial page that gives no date of its own and was written after
    that document, within CARELESS_COPY_WINDOW_DAYS of its taking effect. Being newer is then no evidence for
    the page (it may simply have missed the change). None when the situation is not that."""
    candidates = []
    for official in pair.articles:
        page = pair.other(official)
        if not is_official_document(official) or is_official_document(page):
            continue
        if explicit_effective_date(official, now) is None or not still_in_force(official, now):
            continue
        if explicit_effective_date(page, now) is not None:
            continue
        official_date, page_date = pair.statement_date(official), pair.statement_date(page)
        if official_date is None or page_date is None or page_date <= official_date:
            continue
        in_force = max(explicit_effective_date(official, now), official_date)
        if (page_date - in_force).days > CARELESS_COPY_WINDOW_DAYS:
            continue  # written long after the official change: may be a later decision, not a stale copy
        candidates.append(official)
    return candidates[0] if len(candidates) == 1 else None


def _official_in_force(pair: ConflictPair, now: dt.date) -> ArticleText | None:
    """The official side of a possible careless copy whose two sides speak of one subject; None otherwise (an
    official text and a page about something else carry no authority between them)."""
    return possible_careless_copy(pair, now) if same_subject(pair) else None


def _official_applies(pair: ConflictPair, now: dt.date) -> bool:
    return _official_in_force(pair, now) is not None


def _official_resolve(pair: ConflictPair, now: dt.date) -> str | None:
    official = _official_in_force(pair, now)
    return official.ref if official else None


def _official_reason(pair: ConflictPair, now: dt.date) -> str:
    official = _official_in_force(pair, now)
    if official is None:
        return "no official document with an explicit effective date faces a newer undated page on the same subject"
    page = pair.other(official)
    return (
        f"{official.ref} (\"{official.title}\") is an official document in force since "
        f"{_fmt(explicit_effective_date(official, now))}; {page.ref} is a newer {page.source} page "
        f"(updated {_fmt(page.updated_at)}) that gives no effective date, so its differing statement "
        f"is likely a stale copy"
    )


# --- explicit-effective-date-wins -------------------------------------------------------------

def _reference_dates(pair: ConflictPair, now: dt.date) -> tuple[dt.date | None, dt.date | None]:
    """The date each side's statement is taken to hold from, for comparison.

    Both sides state an effective date: compare those (the later stated change is the current one,
    whatever unrelated edits touched either page since). One side only: that side holds from the
    later of its stated date and its own update (a page edited in February that says "since
    September 2025" vouches for its statement in February too); the other side has its update date.
    """
    explicit_a, explicit_b = explicit_effective_date(pair.a, now), explicit_effective_date(pair.b, now)
    if explicit_a is not None and explicit_b is not None:
        return explicit_a, explicit_b

    def one_sided(explicit: dt.date | None, updated: dt.date | None) -> dt.date | None:
        if explicit is None:
            return updated
        return max(explicit, updated) if updated is not None else explicit

    return one_sided(explicit_a, pair.statement_date(pair.a)), one_sided(explicit_b, pair.statement_date(pair.b))


def _effective_applies(pair: ConflictPair, now: dt.date) -> bool:
    return any(explicit_effective_date(article, now) is not None for article in pair.articles)


def _effective_resolve(pair: ConflictPair, now: dt.date) -> str | None:
    if any(statement_not_yet_in_force(pair, article, now) for article in pair.articles):
        return None  # one side's statement is a change not yet in force: dates cannot settle it
    if possible_careless_copy(pair, now) is not None:
        return None  # the newer undated page may just have missed the official change: its date is no reason
    date_a, date_b = _reference_dates(pair, now)
    # A date the text states is a real date of the statement: any difference counts (the page-date
    # rule below needs a gap, since a page's date may only say when someone last touched it).
    if date_a is None or date_b is None or date_a == date_b:
        return None
    return pair.a.ref if date_a > date_b else pair.b.ref


def _effective_reason(pair: ConflictPair, now: dt.date) -> str:
    parts = []
    for article in pair.articles:
        explicit = explicit_effective_date(article, now)
        if explicit is not None:
            parts.append(f"{article.ref} is in force from {_fmt(explicit)} (stated in its text)")
        else:
            parts.append(f"{article.ref} states no effective date (statement dated {_fmt(pair.statement_date(article))})")
    return "; ".join(parts)


# --- newer-content-date-wins ------------------------------------------------------------------

def stated_period_not_over(pair: ConflictPair, article: ArticleText, now: dt.date) -> tuple[dt.date, dt.date] | None:
    """The period this side says its statement holds for, when it has not ended today (in force, or still to
    come): stated in its title or opening line (for the whole document: "fees and charges, 1 April to 31 March")
    or in the statement in conflict itself. None when the side states no such period."""
    opening = next((line for line in article.body.splitlines() if line.strip()), "")
    texts = [article.title, opening, pair.snippets.get(article.ref) or ""]
    return next((period for text in texts if (period := period_not_over(text, now=now)) is not None), None)


def _older_side(pair: ConflictPair) -> ArticleText:
    return pair.a if pair.statement_date(pair.a) < pair.statement_date(pair.b) else pair.b


def older_side_still_in_its_period(pair: ConflictPair, now: dt.date) -> tuple[ArticleText, tuple[dt.date, dt.date]] | None:
    """The older side, when it states a period of validity that has not ended: a newer text's date does not
    make it stale (its own words say it holds until a date still to come), so recency cannot tell which of
    the two is meant."""
    if not real_date_gap(pair.statement_date(pair.a), pair.statement_date(pair.b)):
        return None
    older = _older_side(pair)
    period = stated_period_not_over(pair, older, now)
    return (older, period) if period is not None else None


def _newer_applies(pair: ConflictPair, now: dt.date) -> bool:
    if not real_date_gap(pair.statement_date(pair.a), pair.statement_date(pair.b)):
        return False  # same date or nearly, or a date missing: recency says nothing
    if older_side_still_in_its_period(pair, now) is not None:
        return False  # the older side says it holds until a date still to come: being newer is no reason
    if possible_careless_copy(pair, now) is not None:
        return False  # the newer undated page may just have missed the official change
    # A newer page announcing a change for later is newer, but not more current: no verdict.
    return not any(statement_not_yet_in_force(pair, article, now) for article in pair.articles)


def _newer_resolve(pair: ConflictPair, now: dt.date) -> str | None:
    if not _newer_applies(pair, now):
        return None
    return pair.a.ref if pair.statement_date(pair.a) > pair.statement_date(pair.b) else pair.b.ref


def _dated(pair: ConflictPair, article: ArticleText) -> str:
    statement = pair.statement_date(article)
    if pair.statement_dates.get(article.ref) and statement != article.updated_at:
        return f"{article.ref}'s statement written {_fmt(statement)} (page updated {_fmt(article.updated_at)})"
    return f"{article.ref} updated {_fmt(statement)}"


def _newer_reason(pair: ConflictPair, now: dt.date) -> str:
    return f"{_dated(pair, pair.a)}, {_dated(pair, pair.b)}"


EXPLICIT_PAST_STATEMENT_LOSES = Rule(
    id="explicit-past-statement-loses",
    type=ANY_TYPE,
    condition="exactly one of the two conflicting statements is explicitly about the past "
    "(\"until <past date>\", \"previously\", \"we used to\")",
    resolution="the statement that is not marked as past wins",
    priority=10,
    condition_check=_past_applies,
    resolution_pick=_past_resolve,
    reason=_past_reason,
)

NOT_YET_IN_FORCE_STATEMENT_LOSES = Rule(
    id="not-yet-in-force-statement-loses",
    type=ANY_TYPE,
    condition="exactly one of the two conflicting statements says it takes effect on a date still in the future",
    resolution="the statement in force today wins (the other becomes right on its date: recheck then)",
    priority=10,
    condition_check=_future_applies,
    resolution_pick=_future_resolve,
    reason=_future_reason,
)

OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE = Rule(
    id="official-effective-beats-newer-page",
    type=ANY_TYPE,
    condition="one side is an official document (a PDF, or titled policy/terms) in force from an explicit "
    "effective date, the other an unofficial web/faq page on the same subject that gives no effective date and "
    "was written after the official document took effect, but within two months of it",
    resolution="the official document wins; the newer page is likely a careless copy of old values",
    priority=20,
    condition_check=_official_applies,
    resolution_pick=_official_resolve,
    reason=_official_reason,
)

EXPLICIT_EFFECTIVE_DATE_WINS = Rule(
    id="explicit-effective-date-wins",
    type=ANY_TYPE,
    condition="at least one side states an explicit effective date (effective / as of / from / since <date>) "
    "that is not in the future, and the pair is not a possible careless copy (an undated unofficial page written "
    "within two months after an official document took effect)",
    resolution="if both state one, the later stated effective date wins; if one does, compare the later of its "
    "stated date and its update date with the other's update date; equal dates cannot tell",
    priority=30,
    condition_check=_effective_applies,
    resolution_pick=_effective_resolve,
    reason=_effective_reason,
)

NEWER_CONTENT_DATE_WINS = Rule(
    id="newer-content-date-wins",
    type=ANY_TYPE,
    condition="the two conflicting statements were written at least two weeks apart (the statement's own date "
    "where the article's history tells, else the page's), neither side only announces a change that is not "
    "in force yet, the older side does not state a period of validity that has not ended yet, and the pair is not "
    "a possible careless copy (an undated unofficial page written within two months after an official document "
    "took effect)",
    resolution="the more recently written statement wins",
    priority=40,
    condition_check=_newer_applies,
    resolution_pick=_newer_resolve,
    reason=_newer_reason,
)


def executable_rules() -> list[Rule]:
    """The shared executable templates, in priority order."""
    return [
        EXPLICIT_PAST_STATEMENT_LOSES,
        NOT_YET_IN_FORCE_STATEMENT_LOSES,
        OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE,
        EXPLICIT_EFFECTIVE_DATE_WINS,
        NEWER_CONTENT_DATE_WINS,
    ]

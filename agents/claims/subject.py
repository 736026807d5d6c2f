"""What a value is said of: the subject of the clause that states it ("Day passes" in "Day passes
can be changed until 24 hours before the visit").

Two values of one kind conflict only when they are said of the same thing. Subjects compared as stems of
their content words: each naming something the other does not ("gold passes" / "silver passes",
"school visits" / "group bookings") are different things; one naming more than the other
("a replacement card" / "the card") is a narrower case of it, a weaker conflict; either saying nothing
("it", "you") decides nothing. General English only: the subject ends at the first verb or label mark.
"""
from __future__ import annotations

import functools
import re
from enum import Enum

import snowballstemmer

from .scope import DAYS, MONTHS
from .stance import NEGATION_RE
from .words import STOPWORDS

# Days and months scope a claim (see scope.py); they never say what a value is of.
CALENDAR_WORDS = frozenset(DAYS) | frozenset(f"{d}s" for d in DAYS) | frozenset(MONTHS) | {"weekday", "weekdays", "weekend", "weekends", "daily"}

# A clause ends at a semicolon, a sentence end or a contrasting conjunction: "gold … free, while silver …".
CLAUSE_BREAK_RE = re.compile(r";|\.\s|,?\s\b(?:while|whereas|but|however)\b|,\s(?:so|and|or|which|because)\b", re.I)
# The subject ends at the first verb (auxiliaries and the verbs prices, rules and schedules are stated
# with) or at a label mark ("Junior members (aged 12 to 17): 20% off").
LABEL_END_RE = re.compile(r"[:(=|]|\s[-\u2013\u2014]\s")
LABEL_MAX_WORDS_TO_VALUE = 3  # "Delivery: $10.99" labels the value; "Fares: A €5, B €7, C €9" lists others
LABEL_MAX_SCOPE_WORDS = 4  # a label this short over a sentence names the case the sentence is of
ADVERBIAL_OPENING_RE = re.compile(r"\s*(?:since|from|until|till|if|when|whenever|after|before|for|in|on|at|"
                                  r"during|as|once|unless|to|by|with|without|from|starting|between)\b", re.I)
PARENTHESES_RE = re.compile(r"\([^()]*\)")
SUBJECT_END_RE = re.compile(
    r"[:(=|]|\s[-\u2013\u2014]\s|\b(?:from|is|are|was|were|be|been|being|can|cannot|can't|could|may|might|must|mustn't|"
    r"will|won't|would|should|shall|need|needs|needn't|cost|costs|get|gets|pay|pays|paid|receive|receives|have|has|"
    r"had|include|includes|included|start|starts|open|opens|close|closes|closed|run|runs|take|takes|apply|applies|"
    r"stay|stays|remain|remains|allow|allows|offer|offers|require|requires|do|does|don't|doesn't|isn't|aren't|"
    r"come|comes|last|lasts|expire|expires|leave|leaves|arrive|arrives|depart|departs|go|goes|give|gives)\b", re.I)
PREPOSITIONS = frozenset("""of with for to in on at by from under over off including except than during
per about via through within without between across up until before after""".split())
FREE_NOUN_RE = re.compile(r"free\s+(?!of\b|to\b|for\b|from\b|with\b|on\b|at\b|in\b|if\b|when\b|and\b|or\b)([a-z][\w\s'\-]*)", re.I)
DISCOUNT_OBJECT_RE = re.compile(r"\S+\s+off\s+(.*)", re.I)
AUXILIARIES = frozenset("""can cannot can't could may might must will won't would should shall be been being is are
was were do does don't doesn't need needs have has had also still only just always then""".split())
PAYER_VERB_RE = re.compile(r"pay|pays|paid|get|gets|receive|receives", re.I)
# Words that say nothing about what a value is of.
EMPTY_WORDS = frozenset("""yes no sorry off member members customer customers client clients user users a an the this that these those our your their its my his her we you they it i us them
each every all any some no one per only just also usually normally currently now today standard regular new
please note price prices fee fees cost costs charge charges rate rates amount total time times""".split())
WORD_RE = re.compile(r"[A-Z][A-Za-z'\-]*(?:\s\d+\b)?|[a-z][A-Za-z'\-]*")
MAX_SUBJECT_WORDS = 16  # a longer "subject" is a fronted clause, not a noun phrase
_stemmer = snowballstemmer.stemmer("english")
_stem_word = functools.lru_cache(maxsize=32768)(_stemmer.stemWord)  # a word's stem, once per process


DISJOINT_MIN_WORDS = 2  # two named subjects with no word in common ("group bookings" / "saver tickets")


class Relation(Enum):
    SAME = "same"
    NARROWER = "narrower"  # one names the other's subject and more: a special case of it
    DIFFERENT = "different"
    UNKNOWN = "unknown"


def _stems(words: list[str]) -> frozenset[str]:
    out = set()
    for word in words:
        lowered = re.sub(r"['\u2019](?:s|re|ll|ve|d)$", "", word.lower())  # "that's" is "that", "pet's" is "pet"
        if lowered in EMPTY_WORDS or lowered in STOPWORDS or lowered in CALENDAR_WORDS:
            continue
        # "Tier 3": a name with its number is one word ("tier 3"), compared whole.
        head, _, number = lowered.partition(" ")
        out.add(_stem_word(head) + (f" {number}" if number else ""))
    return frozenset(out)


def _subject_after(text: str, start: int, position: int) -> frozenset[str] | None:
    padded = " " * start + text[start:]  # offsets kept; the blank start is no clause of its own
    return _clause_subject(padded, position)


@functools.lru_cache(maxsize=16384)
def subject_of(text: str, position: int) -> frozenset[str] | None:
    """Stems of what the value at text[position] is said of: its clause's subject, and for a discount what
    it is off ("Groups: 15% off gold passes" is said of groups and gold passes)."""
    attributive = FREE_NOUN_RE.match(text, position)
    if attributive:  # "our free shuttle runs …": what is free is the noun it qualifies
        named = _short_phrase(SUBJECT_END_RE.split(attributive.group(1), maxsplit=1)[0])
        if named:
            return named
    subject = _clause_subject(text, position)
    discounted = DISCOUNT_OBJECT_RE.match(text, position)
    if subject and discounted:
        subject |= _stems(_head_phrase(WORD_RE.findall(re.split(r"[,.;:()]", discounted.group(1), maxsplit=1)[0])))
    return subject


def _clause_subject(text: str, position: int, *, elliptical: bool = False) -> frozenset[str] | None:
    """Stems of the subject of the clause holding text[position]; None when the value comes before any verb
    or the clause opens with an adverbial ("Since May we …") rather than a noun phrase. `elliptical`: the
    clause after this one has no verb of its own and borrows this clause's subject."""
    breaks = list(CLAUSE_BREAK_RE.finditer(text, 0, position))
    start = breaks[-1].end() if breaks else 0
    if breaks and not SUBJECT_END_RE.search(text, start, position):
        # "…get 50% off fares, and 30% off the vehicle fare": a clause without a verb shares the last one's subject.
        return _clause_subject(text, breaks[-1].start(), elliptical=True)
    # Asides in parentheses are blanked, so "(aged 16 to 25)" neither ends the subject nor joins it.
    clause = PARENTHESES_RE.sub(lambda m: " " * len(m.group()), text[start:position])
    opened = clause.rfind("(")
    if opened >= 0:  # the value stands in an aside: "(5 sailings daily, crossing 42 minutes)"
        aside = clause[opened + 1:].rsplit(", ", 1)[-1]
        if WORD_RE.search(aside):
            return _short_phrase(aside)
        clause = clause[:opened] + ":"  # "A corner office (€640 a month)": what comes before labels the value
    colon = clause.rfind(":")
    if colon > 0:
        label, between = clause[:colon], clause[colon + 1:]
        if len(between.split()) > LABEL_MAX_WORDS_TO_VALUE and not elliptical:
            if not SUBJECT_END_RE.search(between) and not re.search(r"\d", between):
                # "Emergency: emergency appointment, Monday to Friday £85" (no list of other values before it)
                return _noun_phrase(between.split(",", 1)[0])
            # A sentence of its own after its label; a short label says which case it is of ("Cars and vans: the
            # vehicle must …" is said of cars and vans).
            after = _subject_after(text, start + colon + 1, position)
            named = _noun_phrase(label) if len(label.split()) <= LABEL_MAX_SCOPE_WORDS else None
            return after | named if after and named else after
        named = None if elliptical else _short_phrase(between)
        return named or _noun_phrase(label)  # "One-off charges: installation €79": the words at the value
    end = SUBJECT_END_RE.search(clause)
    if end is None:
        # "We answer within 3 days": a pronoun acting with a verb not listed above; what it does is what the value is of.
        acting = PRONOUN_ACTS_RE.match(clause)
        return _acted_on(WORD_RE.findall(acting.group(1))) if acting else None
    if not clause[:end.start()].strip():
        return None
    phrase = clause[:end.start()]
    if LABEL_END_RE.match(end.group()):
        return _short_phrase(clause[end.end():]) or _noun_phrase(phrase)
    if ADVERBIAL_OPENING_RE.match(phrase):
        comma = clause.find(", ")
        if 0 < comma < end.start():  # "With cover, the most you pay is €100": the subject follows the comma
            return _subject_after(text, start + comma + 2, position)
        return None
    words = WORD_RE.findall(phrase)
    if not words or len(words) > MAX_SUBJECT_WORDS:
        return None
    words = _head_phrase(words)
    if not _stems(words) and not PAYER_VERB_RE.fullmatch(end.group()):
        # "You can cancel a gold pass up to 2 hours before": a pronoun acts; what it acts on is the subject.
        return _acted_on(WORD_RE.findall(clause[end.end():]))
    if PAYER_VERB_RE.fullmatch(end.group()):
        # "Adults pay £12 for a day ticket": who pays, and for what, which follows the value.
        rest = text[position:].split(" ", 1)[1] if " " in text[position:] else ""
        words += _head_phrase(WORD_RE.findall(re.split(r"[,.;:()]", rest, maxsplit=1)[0]), leading=True)
    return _stems(words) or None


PRONOUN_ACTS_RE = re.compile(r"\s*(?:we|you|they)\s+(.*)", re.I | re.S)


def _acted_on(words: list[str]) -> frozenset[str] | None:
    """What a pronoun acts on, from the words after it (its verb first): the verb's object ("cancel a gold pass" is
    said of gold passes), or the verb and its preposition's object ("switch to the annual plan", "answer within")."""
    verb, *acted_on = [w for w in words if w.lower() not in AUXILIARIES] or [""]
    if acted_on and acted_on[0].lower() in PREPOSITIONS:
        # "You can switch to the annual plan at no charge": what is free is the switch, not the plan.
        return _stems([verb] + _head_phrase(acted_on)) or None
    return _stems(_head_phrase(acted_on)) or None


def _head_phrase(words: list[str], *, leading: bool = False) -> list[str]:
    """The noun phrase up to its first preposition: "a consultation with one of our vets" is a consultation.
    `leading`: the phrase may open with one ("for a day ticket", "off adult fares")."""
    while leading and words and (words[0].lower() in PREPOSITIONS or words[0].lower() in ("and", "or", "but")):
        words = words[1:]
    for index, word in enumerate(words):
        if word.lower() in PREPOSITIONS:
            # Names after the preposition still say which one: "the ticket office at Elm Square".
            return words[:index] + [w for w in words[index + 1:] if w[:1].isupper()]
    return words


@functools.lru_cache(maxsize=16384)
def statement_subject(text: str) -> frozenset[str] | None:
    """What a whole claim is about: the noun phrase before its first verb, when a verb (not a label) ends it."""
    end = SUBJECT_END_RE.search(text)
    if end is None or LABEL_END_RE.match(end.group()):
        return None
    return _noun_phrase(text[:end.start()])


def _noun_phrase(phrase: str) -> frozenset[str] | None:
    if ADVERBIAL_OPENING_RE.match(phrase):
        return None
    words = WORD_RE.findall(phrase)
    return (_stems(_head_phrase(words)) or None) if len(words) <= MAX_SUBJECT_WORDS else None


def _short_phrase(phrase: str) -> frozenset[str] | None:
    """A few verbless words right before a value ("installation €79", "crossing 42 minutes")."""
    if len(phrase.split()) > LABEL_MAX_WORDS_TO_VALUE or SUBJECT_END_RE.search(phrase):
        return None
    return _stems(WORD_RE.findall(phrase)) or None


@functools.lru_cache(maxsize=16384)
def phrase_stems(phrase: str) -> frozenset[str]:
    """The content stems of a title or label, as subjects are compared."""
    return _stems(WORD_RE.findall(phrase))


NAMED_NOUN_RE = re.compile(r"((?:[A-Z][\w'\-]*\s+){1,3})([A-Za-z][\w'\-]*)")


def named_mentions(text: str, known: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """`known` updated with the nouns `text` names ("Green Rider card": card -> green, rider), so a
    later bare "the card" in the same article can be read as the one last named."""
    out = dict(known)
    for match in NAMED_NOUN_RE.finditer(text):
        words = match.group(1).split() + [match.group(2)]
        for position in range(1, len(words)):
            modifiers = _stems(words[:position])
            noun = _stems(words[position:position + 1])
            if modifiers and len(noun) == 1:
                out[next(iter(noun))] = modifiers
    return out


def resolved(subject: frozenset[str] | None, mentions: dict[str, frozenset[str]]) -> frozenset[str] | None:
    """A bare noun ("the card") with the modifiers its article last named it with."""
    if subject and len(subject) == 1:
        noun = next(iter(subject))
        if noun in mentions:
            return subject | mentions[noun]
    return subject


def label_subject(label: str) -> frozenset[str] | None:
    """A table row's label as the subject of its cells ("Guided tour (90 minutes)" is a guided tour)."""
    return phrase_stems(PARENTHESES_RE.sub(" ", label)) or None


def _weight(subject: frozenset[str]) -> int:
    # A name with its number ("fibre 500") identifies a thing as well as two words do.
    return sum(2 if " " in stem else 1 for stem in subject)


def relation(subject_a: frozenset[str] | None, subject_b: frozenset[str] | None) -> Relation:
    if not subject_a or not subject_b:
        return Relation.UNKNOWN
    only_a, only_b = subject_a - subject_b, subject_b - subject_a
    if only_a and only_b:
        # Contrasting modifiers of one noun ("gold passes" / "silver passes") name different things;
        # subjects with no word in common may be the same thing said in other words ("drivers" / "the car").
        if subject_a & subject_b or min(_weight(subject_a), _weight(subject_b)) >= DISJOINT_MIN_WORDS:
            return Relation.DIFFERENT
        return Relation.UNKNOWN
    if only_a or only_b:
        return Relation.NARROWER
    return Relation.SAME


def actor_before(text: str, position: int) -> frozenset[str] | None:
    """Stems of who or what does the verb at text[position], named right before it in its clause ("bicycles and
    scooters cannot board", "on the evening launch, cats board"): None when a pronoun or nothing names it, or another verb
    stands between (then the words before it are no noun phrase)."""
    breaks = list(CLAUSE_BREAK_RE.finditer(text, 0, position))
    clause = text[breaks[-1].end() if breaks else 0:position]
    if ADVERBIAL_OPENING_RE.match(clause) and ", " in clause:
        clause = clause.rsplit(", ", 1)[1]  # "On the evening launch, cats board": the actor follows the opening
    words = WORD_RE.findall(clause)
    while words and (words[-1].lower() in AUXILIARIES or NEGATION_RE.fullmatch(words[-1])):
        words.pop()
    phrase = " ".join(words)
    if not words or len(words) > MAX_SUBJECT_WORDS or SUBJECT_END_RE.search(phrase) or ADVERBIAL_OPENING_RE.match(phrase):
        return None
    return _stems(_head_phrase(words)) or None


# Words for people: two actors named by them with no word in common may be the same people in other words
# ("members" / "subscribers", "passengers" / "travellers"), never set apart by their wording alone.
PEOPLE_STEMS = phrase_stems(
    "people person customers clients members users guests patients travellers travelers passengers subscribers "
    "students visitors adults children residents owners holders employees staff drivers riders patrons tenants "
    "buyers shoppers participants attendees applicants")


def actors_apart(actor_a: frozenset[str] | None, actor_b: frozenset[str] | None, said_a: str, said_b: str) -> bool:
    """Two actors that are different things: different by `relation`, or named with no word in common where neither
    claim (`said_a` / `said_b`, headings included) says anything of the other's actor ("bicycles cannot …" / "cats …":
    a rule for each)."""
    found = relation(actor_a, actor_b)
    if found is Relation.DIFFERENT:
        return True
    return (found is Relation.UNKNOWN and bool(actor_a) and bool(actor_b)
            and not (actor_a & PEOPLE_STEMS and actor_b & PEOPLE_STEMS)  # "patrons" / "tenants": maybe the same people
            and not actor_a & phrase_stems(said_b) and not actor_b & phrase_stems(said_a))

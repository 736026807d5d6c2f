"""Sentence splitting, tokens and the small generic vocabulary the claim rules share.

Everything keeps character offsets into the article body so that snippets stay exact substrings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Phrases that name the same thing in different words; rewritten before tokenising (same length not needed:
# only tokens are derived from the rewritten text, offsets always come from the original body).
PHRASE_SYNONYMS = [
    (r"electrically[- ]assisted (bicycle|bike)s?", "ebike"),
    (r"\be-?bikes?\b", "ebike"),
    (r"\bbicycles?\b", "bike"),
    (r"\bswitch-?off\b", "withdraw"),
    (r"\bwithdraw(al|n|s|ing)?\b", "withdraw"),
    (r"\bphone number\b", "number"),
    (r"\bcheck-?ups?\b", "checkup"),
    (r"\bno-?shows?\b", "noshow"),
    (r"\bdrop[- ]?box(es)?\b", "dropbox"),
    (r"\bin person\b", "inperson"),
    (r"\bin advance\b", "notice"),
    (r"\bsend(ing)? (it |them |yours |your \w+ )?back\b", "return"),
    (r"\bsent back\b", "return"),
]

STOPWORDS = set(
    """a an the and or but if then so of to in on at by for from with within without into onto over under
    up down out about as is are was were be been being it its this that these those there here what which who
    whom whose when where why how we our ours us you your yours they their them he she his her i me my
    do does did done doing have has had having will would shall should can could may might must
    not no nor only also just all any each every some more most other such own same than too very
    one per via please yes get gets got make makes let lets need needs just still now new ll re ve
    s t d m don doesn didn isn aren wasn weren won can't cannot etc e g i e like well even ever""".split()
)

# Words that only say "this is a price / number / time", not what it is about.
GENERIC_WORDS = set(
    """cost costs price prices priced fee fees charge charges charged pay paying paid only just total
    amount rate rates day days hour hours week weeks month months year years time times minute minutes
    call line number phone tel telephone ring contact us email e-mail write reach open opening closed
    usually normally typically around approximately roughly about include includes included including
    available whole full standard regular current currently new now today
    take takes taken use used give given bring tell go come see want know find ask help keep
    good great note tip important least most""".split()
)
LEMMAS = {"ridden": "ride", "rider": "ride", "riding": "ride", "rid": "ride", "people": "person",
          "cancellation": "cancel", "registration": "register", "eligibility": "eligible"}

DAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTH_NAMES = ["january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december"]
HOLIDAY_WORDS = {"holiday", "holidays", "christmas", "easter", "bank", "new year", "good friday",
                 "boxing", "thanksgiving", "eve"}
SEASON_MONTHS = {"summer": {6, 7, 8}, "winter": {12, 1, 2}, "spring": {3, 4, 5}, "autumn": {9, 10, 11}}

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
}

WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9'\-]*|\d+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def split_sentences(body: str) -> list[Span]:
    """Lines, then sentence ends inside a line. Offsets index into `body`."""
    spans: list[Span] = []
    for line in re.finditer(r"[^\n]+", body):
        base = line.start()
        text = line.group()
        cuts = [0]
        for m in re.finditer(r"(?<=[.!?])\)?\s+(?=[A-Z0-9(\"'])", text):
            # "e.g. X" and "No. 5" are not sentence ends; a single capital before the dot is an initial.
            before = text[: m.start()].rstrip(")")
            if re.search(r"(\be\.g|\bi\.e|\bNo|\b[A-Z])\.$", before):
                continue
            cuts.append(m.end())
        cuts.append(len(text))
        for a, b in zip(cuts, cuts[1:]):
            piece = text[a:b].strip()
            if piece:
                s = base + a + text[a:b].index(piece)
                spans.append(Span(s, s + len(piece), piece))
    return spans


CLAUSE_BREAK_RE = re.compile(r";|\s[-\u2013\u2014]\s|,\s(?:and|but|while|whereas|as long as|provided|unless|except|so|because|which|who)\s|\.\s|\?\s|:\s(?=[a-z])|\bbut\b")


def clause_bounds(sentence: str, pos: int) -> tuple[int, int]:
    """The clause of `sentence` around character `pos` (offsets relative to the sentence)."""
    start, end = 0, len(sentence)
    for m in CLAUSE_BREAK_RE.finditer(sentence):
        if m.end() <= pos:
            start = m.end()
        elif m.start() >= pos:
            end = m.start()
            break
    return start, end


def stem(word: str) -> str:
    w = word.lower().strip("'-")
    w = re.sub(r"'s$|s'$", "", w)
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("es") and w[-3] in "sxz":
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] in "lpt":
        w = w[:-1]
    if len(w) > 2 and w.endswith("v"):
        w += "e"  # "moving" -> "move", "arrived" -> "arrive"
    return w


CLOCK_RE = re.compile(r"\b\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\bET\b", re.I)
# Words that name the general customer line rather than a specific department.
GENERAL_CONTACT = {"customer", "care", "service", "team", "support", "question", "order", "enquiry", "general",
                   "main", "help", "us", "call", "text", "whatsapp", "details", "our"}


ADDRESS_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b(?:https?://|www\.)\S+", re.I)


def normalise_phrases(text: str) -> str:
    # An e-mail or web address is a value, not words about the topic ("help@example" is not "example").
    out = CLOCK_RE.sub(" ", ADDRESS_RE.sub(" ", text)).lower()
    for pattern, repl in PHRASE_SYNONYMS:
        out = re.sub(pattern, repl, out)
    return out


def content_tokens(text: str, *, drop_generic: bool = True) -> set[str]:
    """Stemmed content words: what a claim is about."""
    out: set[str] = set()
    for w in WORD_RE.findall(normalise_phrases(text)):
        lw = w.lower()
        if lw in STOPWORDS or lw.isdigit() or lw in DAY_NAMES or lw in MONTH_NAMES or lw in NUMBER_WORDS:
            continue
        s = LEMMAS.get(stem(lw), stem(lw))
        if s in STOPWORDS or len(s) < 2:
            continue
        if drop_generic and (lw in GENERIC_WORDS or s in GENERIC_WORDS):
            continue
        out.add(s)
    return out


def overlap(a: set[str], b: set[str]) -> float:
    """Share of the smaller set found in the other one (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))

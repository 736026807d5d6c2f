"""Articles as claims: sentences, list items and table rows, each an exact substring of the body.

A claim keeps the heading it sits under (and, for "Yes, …" / "No, …" answers, the question it answers)
as context: scope words there ("Premium plan", "Saturday") qualify the claim without being quoted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

LIST_MARKER_RE = re.compile(r"^\s*(?:[-*\u2022\u2013]|\d{1,2}[.)]|[a-z][.)]|#+)\s+")
SENTENCE_END_RE = re.compile(r"(?<=[.!?])[)\"'\u201d]?\s+(?=[A-Z0-9(\"'\u201c\u20ac$\u00a3])")
# "e.g. Foo", "No. 5", "St. Mary", "J. Smith": a dot that ends an abbreviation or an initial.
ABBREVIATION_RE = re.compile(r"(?:\b(?:e\.g|i\.e|etc|approx|incl|excl|nr|st|dr|mr|mrs|ms|vs|fig|p|pp)|\b[A-Z])\.$", re.I)
NUMBER_ABBREVIATION_RE = re.compile(r"\bno\.$", re.I)  # "No. 5" abbreviates; "…: no. The hall …" ends a sentence
# Dot leaders between a label and its value, as price lists and PDFs set them ("Room hire ....... £18.00"): the row
# is one claim, the leader no sentence end and the row no heading.
LEADER = r"\s*(?:\.{3,}|\u2026+)\s*"
LEADER_SPAN_RE = re.compile(LEADER)
LEADER_RE = re.compile(rf"\S{LEADER}\S")  # between two words: a leader, not an ellipsis that ends a line
LEADER_ROW_RE = re.compile(rf"^(?P<label>[^.\u2026]*[^\s.\u2026]){LEADER}(?P<value>\S.*)$")
LEADER_END_RE = re.compile(r"(?:\.{2}|\u2026)$")  # text up to a sentence-end match that is part of a leader
MIN_CLAIM_CHARS = 12
MAX_CLAIM_CHARS = 400  # longer "sentences" (a page on one line) are cut at clause or word boundaries
MAX_CLAIMS = 400  # per article: a check's cost stays bounded whatever is imported


@dataclass(frozen=True)
class Claim:
    index: int
    start: int
    end: int
    text: str  # body[start:end], exactly
    context: str  # heading / answered question / title: qualifies the claim, never quoted
    label: str = ""  # a table cell's row label ("Corner office"): what the cell's value is of
    column: str = ""  # a table cell's column header ("Parking included"): what the value is
    question: str = ""  # the question this claim answers (the line before it, or a title that asks)
    leader_row: bool = False  # "Room hire ....... £18.00": the label before the dots is what the value is of

    @property
    def with_heading(self) -> str:
        """The claim with what it sits under: where a scope check looks for a name either of them says."""
        return f"{self.context} {self.text}"


def _is_heading(line: str) -> bool:
    stripped = line.strip()
    if stripped.startswith("#"):
        return True
    if LEADER_RE.search(stripped):
        return False
    if stripped.endswith(":") and len(stripped) < 90:
        return True
    # A short line without a sentence end or a number reads as a title ("Opening hours", "Premium plan").
    return len(stripped) < 50 and not re.search(r"[.!?;]$|\d", stripped) and len(stripped.split()) <= 7


INTRO_MIN_WORDS = 5
RUN_IN_TITLE_MAX_WORDS = 5


def _heading(title: str, section: str) -> str:
    """The context of claims under a section: the article's title, then the section's own title."""
    return f"{title} \u2014 {section}"


def _is_run_in_title(sentence: str) -> bool:
    """A numbered clause's title set in its first line ("Cancellation.", "Lost property."): a few words, no number."""
    stripped = sentence.strip()
    return stripped.endswith(".") and len(stripped.split()) <= RUN_IN_TITLE_MAX_WORDS and not re.search(r"\d", stripped)


def _states_values(line: str) -> bool:
    """A line that ends with a colon yet says something with a number in a sentence of its own."""
    stripped = line.strip()
    return stripped.endswith(":") and bool(re.search(r"\d", stripped)) and len(stripped.split()) >= INTRO_MIN_WORDS


def _sentences(line: str) -> list[tuple[int, int]]:
    cuts = [0]
    for match in SENTENCE_END_RE.finditer(line):
        before = line[: match.start()].rstrip(")\"'\u201d")
        if ABBREVIATION_RE.search(before) or LEADER_END_RE.search(before) or (NUMBER_ABBREVIATION_RE.search(before) and line[match.end():][:1].isdigit()):
            continue
        cuts.append(match.end())
    cuts.append(len(line))
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        spans.extend(_bounded(line, a, b))
    return [(a, b) for a, b in spans if line[a:b].strip()]


def _bounded(line: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut a span longer than MAX_CLAIM_CHARS at its last clause break (or space) before the limit."""
    spans = []
    while end - start > MAX_CLAIM_CHARS:
        window = line[start:start + MAX_CLAIM_CHARS]
        cut = max(window.rfind("; "), window.rfind(", "), window.rfind(" "))
        cut = start + (cut + 1 if cut > MAX_CLAIM_CHARS // 4 else MAX_CLAIM_CHARS)
        spans.append((start, cut))
        start = cut
    spans.append((start, end))
    return spans


TABLE_ROW_RE = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE_RE = re.compile(r"^[\s|:\-]+$")
CELL_RE = re.compile(r"[^|]+")
MIN_CELL_CHARS = 2


def _cells(line: str, base: int) -> list[tuple[int, int, str]]:
    """(start, end, text) of each non-empty cell of a Markdown table row, offsets in the body."""
    out = []
    for match in CELL_RE.finditer(line):
        text = match.group().strip()
        if text:
            start = base + match.start() + match.group().index(text)
            out.append((start, start + len(text), text))
    return out


def _table_claims(line: str, base: int, header: list[str], heading: str, index: int) -> list[Claim]:
    """A table row as one claim per value cell: its context is the row's label and the column's header
    ("Corner office, Parking included"), so "| Corner office | 4 hours |" aligns with "Corner office: 2 hours"."""
    cells = _cells(line, base)
    if len(cells) < 2:
        return []
    label = cells[0][2]
    claims = []
    for column, (start, end, text) in enumerate(cells[1:], start=1):
        if len(text) < MIN_CELL_CHARS:
            continue
        column_name = header[column] if column < len(header) else ""
        context = f"{heading} \u2014 {label}" + (f", {column_name}" if column_name else "")
        claims.append(Claim(index=index + len(claims), start=start, end=end, text=text, context=context, label=label,
                            column=column_name))
    return claims


def split_claims(title: str, body: str) -> list[Claim]:
    """Every claim of an article in reading order, with its context."""
    claims: list[Claim] = []
    heading = title
    question = title.strip() if title.strip().endswith("?") else ""  # the last question asked, for its answer
    header: list[str] | None = None  # the column names of the table being read
    for line_match in re.finditer(r"[^\n]+", body):
        line = line_match.group()
        base = line_match.start()
        if TABLE_ROW_RE.match(line):
            if TABLE_RULE_RE.match(line):
                continue
            if header is None:
                header = [text for _, _, text in _cells(line, 0)]
                continue
            claims.extend(_table_claims(line, base, header, heading, len(claims)))
            continue
        header = None
        marker = LIST_MARKER_RE.match(line)
        offset = marker.end() if marker else 0
        content = line[offset:]
        if not content.strip():
            continue
        if _is_heading(content) and not marker:
            heading = _heading(title, content.strip().rstrip(":"))
            if not _states_values(content):
                continue
            # "For €30 a month you get:" introduces a list and states a price: a heading and a claim.
        row = LEADER_ROW_RE.match(content.strip())
        if row and not LEADER_SPAN_RE.search(row.group("value")):  # one label, one value
            piece = content.strip()
            start = base + offset + content.index(piece)
            claims.append(Claim(index=len(claims), start=start, end=start + len(piece), text=piece, context=heading,
                                label=row.group("label").strip(), leader_row=True))
            question = ""  # answered, as by a sentence
            continue
        spans = _sentences(content)
        line_heading = heading
        first = content[spans[0][0]:spans[0][1]] if spans else ""
        if marker and len(spans) > 1 and _is_run_in_title(first):
            # "5. Cancellation. You may cancel ...": the clause's title is its sentences' heading, not a claim.
            line_heading = _heading(title, first.strip().rstrip("."))
            spans = spans[1:]
        for a, b in spans:
            piece = content[a:b].strip()
            start = base + offset + a + content[a:b].index(piece)
            if piece.endswith("?"):
                question = piece  # asks, asserts nothing
                continue
            if len(piece) < MIN_CLAIM_CHARS and not re.search(r"\d", piece):
                continue
            context = f"{line_heading} \u2014 {question}" if question and question != line_heading else line_heading
            claims.append(Claim(index=len(claims), start=start, end=start + len(piece), text=piece, context=context,
                                question=question))
            question = ""
        if content.rstrip().endswith(":") and marker:
            heading = _heading(title, content.strip().rstrip(":"))
    return claims[:MAX_CLAIMS]

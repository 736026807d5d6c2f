"""Policy documents as PDF: one article per file, text extracted page by page with pypdf."""
from __future__ import annotations

import datetime as dt
import logging
import re
from pathlib import Path

from pypdf import PasswordType, PdfReader

from articles.ingest.common import IngestError, ParsedArticle, normalise_body, normalise_title

# pypdf does not raise on a damaged page: it logs a warning from its stream filters and returns what it
# could decode (often nothing). Those warnings are how we learn that a page's text was lost.
_FILTERS_LOGGER = logging.getLogger("pypdf.filters")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _extract_page_text(page) -> tuple[str, list[str]]:
    """(text, stream-decoding problems) for one page."""
    collector = _Collect()
    previous_level = _FILTERS_LOGGER.level
    _FILTERS_LOGGER.addHandler(collector)
    _FILTERS_LOGGER.setLevel(logging.WARNING)
    try:
        return page.extract_text() or "", collector.messages
    finally:
        _FILTERS_LOGGER.removeHandler(collector)
        _FILTERS_LOGGER.setLevel(previous_level)

_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
# Bullet glyphs as they come out of PDFs; \x7f is what a "•" in a standard-encoded Type 1 font often becomes.
_BULLET = re.compile(r"^(?:[•◦▪▫●○■□‣⁃·\x7f*-]|\d{1,3}[.)]|[a-z][.)])\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?:;)\]\"”]$")
_PLACEHOLDER_TITLES = {"untitled", "(untitled)", "unknown", "(anonymous)"}

# A line shorter than this share of the page's usual line length ends its paragraph: wrapped text fills
# the line, the last line of a paragraph, a heading or a list item rarely does.
_SHORT_LINE_SHARE = 0.75


def _clean_line(line: str) -> str:
    line = line.translate(_LIGATURES).replace("\u00a0", " ")
    bullet = _BULLET.match(line.strip())
    if bullet and bullet.group(0).strip() in {"•", "◦", "▪", "▫", "●", "○", "■", "□", "‣", "⁃", "·", "\x7f", "*"}:
        line = "- " + line.strip()[bullet.end():]
    line = _CONTROL.sub("", line)
    return " ".join(line.split())


def _join_wrapped(left: str, right: str) -> str:
    """Undo line wrapping; "infor-" + "mation" -> "information", but "Wi-" + "Fi" keeps its hyphen."""
    if left.endswith("\u00ad"):
        return left[:-1] + right
    if left.endswith("-") and len(left) > 1 and left[-2].isalpha() and right[:1].islower():
        return left[:-1] + right
    return f"{left} {right}"


def page_lines(text: str) -> list[str]:
    """Cleaned lines of one page's extracted text; "" marks a gap."""
    lines = [_clean_line(line) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    # A lone page number at the top or bottom is furniture, not content.
    non_empty = [index for index, line in enumerate(lines) if line]
    for index in (non_empty[:1] + non_empty[-1:]) if len(non_empty) > 1 else []:
        if _PAGE_NUMBER.match(lines[index]):
            lines[index] = ""
    return lines


def full_line_length(pages: list[list[str]]) -> int:
    """Characters in a full line of this document: the longest line, or near it in a long document so one
    stray wide line (a URL, a table row) does not make every ordinary line look short. Measured over the
    whole document because a page with three lines says nothing about the text width."""
    lengths = sorted(len(line) for lines in pages for line in lines if line)
    if not lengths:
        return 0
    return lengths[-1] if len(lengths) < 20 else lengths[int(len(lengths) * 0.95)]


def page_paragraphs(lines: list[str], *, full_length: int) -> list[str]:
    """Paragraphs of one page: wrapped lines joined, list items kept one per line."""
    short_below = full_length * _SHORT_LINE_SHARE

    paragraphs: list[list[str]] = []
    current: list[str] = []
    current_is_list = False
    previous_short = True

    def flush() -> None:
        nonlocal current, current_is_list
        if current:
            paragraphs.append(current)
        current, current_is_list = [], False

    for line in lines:
        if not line:
            flush()
            previous_short = True
            continue
        if _BULLET.match(line):
            if current and not current_is_list:
                flush()
            current.append(line)
            current_is_list = True
        elif current and not previous_short:
            current[-1] = _join_wrapped(current[-1], line)
        else:
            flush()
            current.append(line)
        previous_short = len(line) < short_below
    flush()
    return ["\n".join(paragraph) for paragraph in paragraphs]


def _metadata_date(reader: PdfReader) -> dt.date | None:
    metadata = reader.metadata
    if metadata is None:
        return None
    for attribute in ("modification_date", "creation_date"):
        try:
            value = getattr(metadata, attribute)
        except Exception:  # malformed D:... strings are common; the other date may still be good
            continue
        if value is not None:
            return value.date()
    return None


def _metadata_title(reader: PdfReader) -> str:
    try:
        title = reader.metadata.title if reader.metadata is not None else None
    except Exception:
        return ""
    title = normalise_title(str(title or ""))
    return "" if title.lower() in _PLACEHOLDER_TITLES else title


def parse_pdf(path: Path) -> list[ParsedArticle]:
    try:
        reader = PdfReader(path)
    except Exception as exc:  # pypdf raises many types for damaged files (PdfReadError, struct errors, ...)
        raise IngestError(path, None, f"unreadable PDF: {exc}") from None

    if reader.is_encrypted:
        # Many PDFs are "encrypted" only to restrict printing and open with an empty password.
        try:
            opened = reader.decrypt("") != PasswordType.NOT_DECRYPTED
        except Exception as exc:
            raise IngestError(path, None, f"encrypted PDF cannot be opened: {exc}") from None
        if not opened:
            raise IngestError(path, None, "encrypted PDF needs a password; export an unprotected copy")

    try:
        pages = list(reader.pages)
    except Exception as exc:
        raise IngestError(path, None, f"unreadable PDF page tree: {exc}") from None

    page_texts: list[list[str]] = []
    for number, page in enumerate(pages, start=1):
        try:
            text, problems = _extract_page_text(page)
        except Exception as exc:
            raise IngestError(path, f"page {number}", f"cannot extract text: {exc}") from None
        if problems:
            # Importing the rest would publish a policy with a page silently missing.
            raise IngestError(path, f"page {number}", f"damaged content stream: {problems[0]}")
        page_texts.append(page_lines(text))

    full_length = full_line_length(page_texts)
    paragraphs: list[str] = []
    for lines in page_texts:
        page_text = page_paragraphs(lines, full_length=full_length)
        # A sentence running over the page break: glue it back rather than leave a broken paragraph.
        if paragraphs and page_text and not _SENTENCE_END.search(paragraphs[-1]) and page_text[0][:1].islower():
            paragraphs[-1] = _join_wrapped(paragraphs[-1], page_text.pop(0))
        paragraphs.extend(page_text)

    if not paragraphs:
        raise IngestError(path, None, "no extractable text (a scanned PDF needs OCR before import)")

    first_line = next(line for lines in page_texts for line in lines if line)
    title = _metadata_title(reader) or first_line[:200]
    # A first paragraph that is just the title is its heading; one that merely starts with it is content.
    if len(paragraphs) > 1 and normalise_title(paragraphs[0]).casefold() == title.casefold():
        paragraphs.pop(0)

    return [
        ParsedArticle(
            ref=path.stem,
            title=normalise_title(title),
            body=normalise_body("\n\n".join(paragraphs)),
            source="pdf",
            source_uri=path.name,
            updated_at=_metadata_date(reader),
            location=path.name,
        )
    ]

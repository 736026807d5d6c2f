"""What every format parser shares: the parsed article, the error, refs, dates and body text."""
from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

SOURCES = ("faq", "pdf", "web", "manual")

# Refs end up in URLs and in prompts; a bounded length keeps both readable.
MAX_REF_LENGTH = 100


@dataclass(frozen=True)
class ParsedArticle:
    ref: str
    title: str
    body: str
    source: str  # faq | pdf | web | manual
    source_uri: str
    updated_at: dt.date | None
    location: str  # where it came from, for messages: "faq.csv row 3", "policy.pdf"


class IngestError(Exception):
    """A file that cannot be imported; the message names the file and, when known, the row or page."""

    def __init__(self, path: Path | None, location: str | None, message: str) -> None:
        self.path = Path(path) if path is not None else None
        self.location = location
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        if self.location:
            return f"{self.path.name}, {self.location}: {self.message}"
        return f"{self.path.name}: {self.message}"


def slugify(text: str) -> str:
    """Lower-case words joined by hyphens; accents folded, other scripts kept so CJK titles still get a ref."""
    decomposed = unicodedata.normalize("NFKD", text)
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    slug = re.sub(r"[\W_]+", "-", without_marks.lower()).strip("-")
    if len(slug) > MAX_REF_LENGTH:
        slug = slug[:MAX_REF_LENGTH].rsplit("-", 1)[0] or slug[:MAX_REF_LENGTH]
    return slug


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_date(value: Any) -> dt.date | None:
    """A date from YYYY-MM-DD, an ISO 8601 timestamp (date part), or a date/datetime object.

    Empty means "unknown" (None). Anything else raises ValueError: a guessed date would silently
    decide "the more recent article wins" the wrong way, so ambiguous forms like 05/03/2024 are refused.
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected YYYY-MM-DD, got {value!r}")
    text = value.strip()
    if not text:
        return None
    if not _ISO_DATE.match(text):
        raise ValueError(f"expected YYYY-MM-DD, got {text!r}")
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text)
        return dt.datetime.fromisoformat(text).date()
    except ValueError:
        raise ValueError(f"not a valid date: {text!r}") from None


def normalise_body(text: str) -> str:
    """\\r\\n -> \\n, trailing spaces stripped, paragraphs separated by exactly one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def normalise_title(text: str) -> str:
    return " ".join(text.split())


def check_source(*, path: Path, location: str | None, value: Any, default: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if not isinstance(value, str) or value.strip().lower() not in SOURCES:
        raise IngestError(path, location, f"unknown source {value!r} (expected one of: {', '.join(SOURCES)})")
    return value.strip().lower()


def check_date(*, path: Path, location: str | None, field: str, value: Any) -> dt.date | None:
    try:
        return parse_date(value)
    except ValueError as exc:
        raise IngestError(path, location, f"field {field!r}: {exc}") from None


def _text_field(record: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    """The first of `names` present with a non-empty value, as (name, value)."""
    for name in names:
        value = record.get(name)
        if value is not None and not (isinstance(value, str) and not value.strip()):
            return name, value
    return None, None


def article_from_record(
    *, path: Path, location: str, record: Mapping[str, Any], default_source: str = "faq"
) -> ParsedArticle:
    """One FAQ-shaped record (JSON object or CSV row) -> ParsedArticle. `location` is "row 3" / "item 2"."""
    title_field, title = _text_field(record, ("title", "question"))
    if title_field is None:
        raise IngestError(path, location, "missing title (need 'title' or 'question')")
    if not isinstance(title, str):
        raise IngestError(path, location, f"field {title_field!r} must be text, got {type(title).__name__}")
    body_field, body = _text_field(record, ("body", "answer"))
    if body_field is None:
        raise IngestError(path, location, "empty body (need 'body' or 'answer')")
    if not isinstance(body, str):
        raise IngestError(path, location, f"field {body_field!r} must be text, got {type(body).__name__}")

    raw_ref = record.get("ref")
    if raw_ref is None or (isinstance(raw_ref, str) and not raw_ref.strip()):
        ref = slugify(title)
        if not ref:
            raise IngestError(path, location, "no 'ref' given and the title yields an empty slug")
    elif isinstance(raw_ref, (str, int)) and not isinstance(raw_ref, bool):
        ref = str(raw_ref).strip()
    else:
        raise IngestError(path, location, f"field 'ref' must be text, got {type(raw_ref).__name__}")

    source_uri = record.get("source_uri")
    if source_uri is not None and not isinstance(source_uri, str):
        raise IngestError(path, location, f"field 'source_uri' must be text, got {type(source_uri).__name__}")

    return ParsedArticle(
        ref=ref,
        title=normalise_title(title),
        body=normalise_body(body),
        source=check_source(path=path, location=location, value=record.get("source"), default=default_source),
        source_uri=(source_uri or "").strip() or path.name,
        updated_at=check_date(path=path, location=location, field="updated_at", value=record.get("updated_at")),
        location=f"{path.name} {location}",
    )


def check_unique_refs(*, path: Path, articles: list[ParsedArticle]) -> None:
    """Two rows with one ref would silently overwrite each other on import."""
    first_seen: dict[str, ParsedArticle] = {}
    for article in articles:
        earlier = first_seen.setdefault(article.ref, article)
        if earlier is not article:
            location = article.location.removeprefix(f"{path.name} ")
            raise IngestError(
                path, location, f"duplicate ref {article.ref!r} (also used by {earlier.location})"
            )

"""Saved web pages: the main content found by trafilatura, one article per file."""
from __future__ import annotations

import datetime as dt
import email.utils
from pathlib import Path

import trafilatura
from lxml import etree
from trafilatura.settings import use_config
from trafilatura.utils import load_html

from articles.ingest.common import (
    IngestError,
    ParsedArticle,
    check_date,
    normalise_body,
    normalise_title,
)

# Only dates the page states in its markup: htmldate's extensive search would take "© 2019" or a date
# in the text as the page's date, and a wrong date decides "the more recent article wins" wrongly.
_DATE_PARAMS = {"extensive_search": False, "original_date": False, "outputformat": "%Y-%m-%d"}

# trafilatura treats under 250 extracted characters as a failure and falls back to the whole page's text
# in one paragraph (menu included); a KB answer is often that short, so trust the main extraction.
_CONFIG = use_config()
_CONFIG.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")


def _words(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _inline_text(element: etree._Element) -> str:
    """Text of a paragraph-like element; an explicit line break (<br>, shown as <lb/>) stays a line break."""
    parts: list[str] = [element.text or ""]
    for child in element:
        if child.tag == "lb":
            parts.append("\n")
        else:
            parts.append("".join(child.itertext()))
        parts.append(child.tail or "")
    return "\n".join(" ".join(line.split()) for line in "".join(parts).split("\n")).strip()


def _blocks(body: etree._Element) -> list[tuple[str, str]]:
    """(kind, text) per block of trafilatura's XML body; lists and tables become one block each."""
    blocks: list[tuple[str, str]] = []
    if body.text and body.text.strip():
        blocks.append(("p", " ".join(body.text.split())))
    for element in body:
        if element.tag == "list":
            items = [_words(item) for item in element.iter("item")]
            text = "\n".join(f"- {item}" for item in items if item)
        elif element.tag == "table":
            rows = [" | ".join(_words(cell) for cell in row.iter("cell")) for row in element.iter("row")]
            text = "\n".join(row for row in rows if row.strip(" |"))
        elif element.tag == "code":
            text = "".join(element.itertext()).strip("\n")
        else:
            text = _inline_text(element)
        if text:
            blocks.append((element.tag, text))
        if element.tail and element.tail.strip():
            blocks.append(("p", " ".join(element.tail.split())))
    return blocks


def _meta(tree: etree._Element, *, names: tuple[str, ...]) -> str | None:
    """content= of the first <meta> whose name, property or http-equiv is one of `names` (case-insensitive)."""
    wanted = {name.lower() for name in names}
    for meta in tree.iter("meta"):
        key = meta.get("name") or meta.get("property") or meta.get("http-equiv") or ""
        if key.strip().lower() in wanted and (meta.get("content") or "").strip():
            return meta.get("content").strip()
    return None


def _page_date(*, path: Path, tree: etree._Element, fallback: str | None) -> dt.date | None:
    for field, names in (
        ("last-modified", ("last-modified",)),
        ("article:modified_time", ("article:modified_time", "og:updated_time")),
    ):
        value = _meta(tree, names=names)
        if value is None:
            continue
        if value[:1].isalpha():  # HTTP-style "Tue, 05 Mar 2024 10:00:00 GMT", as servers write Last-Modified
            try:
                return email.utils.parsedate_to_datetime(value).date()
            except (TypeError, ValueError):
                pass
        return check_date(path=path, location=None, field=field, value=value)
    return check_date(path=path, location=None, field="date", value=fallback) if fallback else None


def _link_words(tree: etree._Element) -> set[str]:
    return {word.casefold() for a in tree.iter("a") for word in "".join(a.itertext()).split()}


def parse_html(path: Path) -> list[ParsedArticle]:
    raw = path.read_bytes()
    tree = load_html(raw)  # trafilatura's loader: detects the charset the way extraction will
    if tree is None:
        raise IngestError(path, None, "not an HTML document")

    document = trafilatura.bare_extraction(
        raw,
        with_metadata=True,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        date_extraction_params=_DATE_PARAMS,
        config=_CONFIG,
    )
    blocks = _blocks(document.body) if document is not None and document.body is not None else []
    # On a page that is only a menu, trafilatura's fallback returns the menu; that is not an article.
    link_words = _link_words(tree)
    content_words = [word for _, text in blocks for word in text.split() if any(ch.isalnum() for ch in word)]
    if all(word.casefold() in link_words for word in content_words):
        raise IngestError(path, None, "no main content found (only navigation or an empty page)")

    title = normalise_title(document.title or "")
    if not title:
        title_element = tree.find(".//title")
        title = normalise_title(title_element.text or "") if title_element is not None else ""
    if blocks and blocks[0][0] == "head":
        if not title:
            title = normalise_title(blocks[0][1])
        if normalise_title(blocks[0][1]).casefold() == title.casefold() and len(blocks) > 1:
            blocks.pop(0)  # the heading became the title
    if not title:
        raise IngestError(path, None, "no title (<title>, og:title or a first heading)")

    canonical = next(
        (
            link.get("href").strip()
            for link in tree.iter("link")
            if "canonical" in (link.get("rel") or "").lower().split() and (link.get("href") or "").strip()
        ),
        None,
    )
    ref = _meta(tree, names=("kb:ref",)) or path.stem
    return [
        ParsedArticle(
            ref=ref,
            title=title,
            body=normalise_body("\n\n".join(text for _, text in blocks)),
            source="web",
            source_uri=canonical or path.name,
            updated_at=_page_date(path=path, tree=tree, fallback=document.date),
            location=path.name,
        )
    ]

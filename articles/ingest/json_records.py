"""FAQ exports as JSON: a list of objects, or {"articles": [...]}."""
from __future__ import annotations

import json
from pathlib import Path

from articles.ingest.common import IngestError, ParsedArticle, article_from_record, check_unique_refs


def parse_json(path: Path) -> list[ParsedArticle]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(path, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}") from None

    if isinstance(data, dict):
        if "articles" not in data:
            raise IngestError(path, None, 'expected a list of articles or an object with key "articles"')
        data = data["articles"]
    if not isinstance(data, list):
        raise IngestError(path, None, f"expected a list of articles, got {type(data).__name__}")

    articles = []
    for number, record in enumerate(data, start=1):
        location = f"item {number}"
        if not isinstance(record, dict):
            raise IngestError(path, location, f"expected an object, got {type(record).__name__}")
        articles.append(article_from_record(path=path, location=location, record=record))
    check_unique_refs(path=path, articles=articles)
    return articles

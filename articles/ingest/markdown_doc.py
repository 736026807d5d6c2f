"""Hand-written manual pages: Markdown with optional YAML front matter, one article per file."""
from __future__ import annotations

import re
from pathlib import Path

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from articles.ingest.common import (
    IngestError,
    ParsedArticle,
    check_date,
    check_source,
    normalise_body,
    normalise_title,
)


class _PlainYAMLHandler(YAMLHandler):
    """Front matter values as plain strings: YAML's own typing would turn `ref: 0012` into 12 and
    reject `updated_at: 2024-02-30` with an error that names no field; we check each field ourselves."""

    def load(self, fm: str, **kwargs: object):
        kwargs.setdefault("Loader", yaml.BaseLoader)
        return super().load(fm, **kwargs)


_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_H1 = re.compile(r"^\s{0,3}#\s+(.*?)(?:\s+#+)?\s*$")


def _first_h1(lines: list[str]) -> int | None:
    """Index of the first `# ` heading outside fenced code (a `# comment` in a shell block is not a title)."""
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _H1.match(line):
            return index
    return None


def parse_markdown(path: Path) -> list[ParsedArticle]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        post = frontmatter.loads(text, handler=_PlainYAMLHandler())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # The block handed to YAML starts at the end of the opening `---` line and marks count from 0,
        # so mark.line + 1 is the line number in the file.
        location = f"line {mark.line + 1}" if mark is not None else "front matter"
        raise IngestError(path, location, f"invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    meta = post.metadata
    if not isinstance(meta, dict):
        raise IngestError(path, "front matter", "expected key: value pairs")

    lines = post.content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    title = meta.get("title")
    if title is not None and not isinstance(title, str):
        raise IngestError(path, "front matter", "field 'title' must be text")
    if not title or not title.strip():
        heading = _first_h1(lines)
        if heading is None:
            raise IngestError(path, None, "no title: give 'title' in front matter or start with a '# ' heading")
        title = _H1.match(lines[heading]).group(1)
        del lines[heading]  # the heading became the title; keeping it would repeat it in every chunk

    body = normalise_body("\n".join(lines))
    if not body:
        raise IngestError(path, None, "empty body")

    for field in ("ref", "source_uri", "updated_at", "source"):
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise IngestError(path, "front matter", f"field {field!r} must be text")
    ref = (meta.get("ref") or "").strip() or path.stem
    source_uri = (meta.get("source_uri") or "").strip()
    return [
        ParsedArticle(
            ref=ref,
            title=normalise_title(title),
            body=body,
            source=check_source(path=path, location="front matter", value=meta.get("source"), default="manual"),
            source_uri=source_uri or path.name,
            updated_at=check_date(
                path=path, location="front matter", field="updated_at", value=meta.get("updated_at")
            ),
            location=path.name,
        )
    ]

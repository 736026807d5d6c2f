"""Parse knowledge-base files (FAQ JSON/CSV, Markdown manuals, PDFs, saved web pages) into plain articles.

`parse_path` is what `manage.py import_kb` calls; it knows nothing of models, so the import service
decides what to create or update. Every problem raises IngestError naming the file and row or page.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from articles.ingest.common import SOURCES, IngestError, ParsedArticle, slugify
from articles.ingest.csv_records import parse_csv
from articles.ingest.html_page import parse_html
from articles.ingest.json_records import parse_json
from articles.ingest.markdown_doc import parse_markdown
from articles.ingest.pdf_doc import parse_pdf

__all__ = ["IngestError", "ParsedArticle", "SOURCES", "SUPPORTED_SUFFIXES", "parse_path", "slugify"]

PARSERS: dict[str, Callable[[Path], list[ParsedArticle]]] = {
    ".json": parse_json,
    ".csv": parse_csv,
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".pdf": parse_pdf,
    ".html": parse_html,
    ".htm": parse_html,
}
SUPPORTED_SUFFIXES = tuple(PARSERS)


def _supported_files(directory: Path) -> list[Path]:
    """Supported files under `directory`, sorted by relative path so every run imports in the same order.
    Hidden files and folders (.git, .DS_Store, editor backups) are skipped."""
    found = []
    for path in directory.rglob("*"):
        relative = path.relative_to(directory)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and path.suffix.lower() in PARSERS:
            found.append(path)
    return sorted(found, key=lambda path: path.relative_to(directory).as_posix())


def parse_path(path: Path) -> list[ParsedArticle]:
    """Articles in one file, or in every supported file under a directory (sorted, recursive).

    Refs must be unique across everything parsed in one call: two files with one ref would
    silently overwrite each other on import.
    """
    path = Path(path)
    if path.is_dir():
        articles: list[ParsedArticle] = []
        seen: dict[str, ParsedArticle] = {}
        for file_path in _supported_files(path):
            for article in _parse_file(file_path):
                earlier = seen.setdefault(article.ref, article)
                if earlier is not article:
                    raise IngestError(
                        file_path,
                        article.location.removeprefix(file_path.name).strip() or None,
                        f"duplicate ref {article.ref!r} (also used by {earlier.location})",
                    )
                articles.append(article)
        return articles
    return _parse_file(path)


def _parse_file(path: Path) -> list[ParsedArticle]:
    parser = PARSERS.get(path.suffix.lower())
    if parser is None:
        supported = ", ".join(SUPPORTED_SUFFIXES)
        raise IngestError(path, None, f"unsupported file type {path.suffix or '(none)'!r} (supported: {supported})")
    if not path.exists():
        raise IngestError(path, None, "no such file")
    try:
        articles = parser(path)
    except OSError as exc:
        raise IngestError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    except RecursionError:
        raise IngestError(path, None, "nested too deeply to read (e.g. JSON arrays inside arrays)") from None
    if not articles:
        # A header-only CSV or an empty JSON list is a mistake to report, not a successful import of nothing.
        raise IngestError(path, None, "nothing to import: the file holds no articles")
    return articles

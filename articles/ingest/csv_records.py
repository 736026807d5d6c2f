"""FAQ exports as CSV (UTF-8, header row). Rows are numbered as a spreadsheet shows them: header = row 1."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from articles.ingest.common import IngestError, ParsedArticle, article_from_record, check_unique_refs

# Answers can be long; the csv module's default cap (128 KiB per field) would reject a legitimate manual page.
csv.field_size_limit(16 * 1024 * 1024)


def parse_csv(path: Path) -> list[ParsedArticle]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # Excel writes a BOM
    except UnicodeDecodeError as exc:
        raise IngestError(path, None, f"not UTF-8 text (byte {exc.start}); save the CSV as UTF-8") from None

    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise IngestError(path, "row 1", f"unreadable CSV: {exc}") from None
    if header is None or not any(cell.strip() for cell in header):
        raise IngestError(path, "row 1", "no header row")
    columns = [cell.strip().lower() for cell in header]
    if "title" not in columns and "question" not in columns:
        raise IngestError(path, "row 1", "missing column 'title' (or 'question')")
    if "body" not in columns and "answer" not in columns:
        raise IngestError(path, "row 1", "missing column 'body' (or 'answer')")

    articles = []
    row_number = 1
    while True:
        row_number += 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise IngestError(path, f"row {row_number}", f"unreadable CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue  # blank spacer rows are common in hand-edited sheets
        if any(cell.strip() for cell in row[len(columns):]):
            raise IngestError(path, f"row {row_number}", f"{len(row)} cells but the header has {len(columns)} columns")
        record = {name: value for name, value in zip(columns, row) if name}
        articles.append(article_from_record(path=path, location=f"row {row_number}", record=record))
    check_unique_refs(path=path, articles=articles)
    return articles

"""The `suggest_resolutions` JSON Lines contract, over plain data (no Django, no database).

Input line: `{"id", "question"?, "now"?, "articles": [{"ref", "title", "body", "updated_at", "source"}],
"conflicts": [{"refs": [a, b], "type"?, "snippets"?}]}`; other keys are ignored, so a labelled file
(or detect_conflicts' output merged with its input) can be fed as is.
Output line: `{"id", "suggestions": [{"refs", "winner", "explanation", "rules"}]}`.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.macr.calibration import Priors, default_threshold
from agents.macr.reasoner import suggest
from agents.macr.rules import Rule
from agents.types import ArticleText, Suggestion, pair_key


class SetFormatError(ValueError):
    """A malformed input line; names the line number and the offending field."""

    def __init__(self, *, line_number: int, field_name: str, problem: str) -> None:
        self.line_number = line_number
        self.field_name = field_name
        self.problem = problem
        super().__init__(f"line {line_number}: field {field_name!r}: {problem}")


@dataclass(frozen=True)
class ConflictRequest:
    refs: tuple[str, str]
    type: str = "other"
    snippets: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RetrievalSet:
    id: Any  # echoed as given
    now: dt.date
    articles: dict[str, ArticleText]
    conflicts: list[ConflictRequest]


def _parse_date(value, *, line_number: int, field_name: str) -> dt.date | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SetFormatError(line_number=line_number, field_name=field_name, problem="expected YYYY-MM-DD")
    try:
        # "2024-05-01" or a full timestamp ("2024-05-01T10:00:00Z"): the date is what counts.
        if "T" in value:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).date()
        return dt.date.fromisoformat(value)
    except ValueError:
        raise SetFormatError(
            line_number=line_number, field_name=field_name, problem=f"{value!r} is not a YYYY-MM-DD date"
        ) from None


def _require_str(mapping: dict, key: str, *, line_number: int, field_name: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value:
        raise SetFormatError(line_number=line_number, field_name=field_name, problem="missing or not a non-empty string")
    return value


def parse_set_line(*, line: str, line_number: int, today: dt.date) -> RetrievalSet:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise SetFormatError(line_number=line_number, field_name="(line)", problem=f"invalid JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise SetFormatError(line_number=line_number, field_name="(line)", problem="expected a JSON object")

    set_id = data.get("id")
    if set_id in (None, ""):
        raise SetFormatError(line_number=line_number, field_name="id", problem="missing")
    now = _parse_date(data.get("now"), line_number=line_number, field_name="now") or today

    raw_articles = data.get("articles")
    if not isinstance(raw_articles, list):
        raise SetFormatError(line_number=line_number, field_name="articles", problem="missing or not a list")
    articles: dict[str, ArticleText] = {}
    for index, raw in enumerate(raw_articles):
        prefix = f"articles[{index}]"
        if not isinstance(raw, dict):
            raise SetFormatError(line_number=line_number, field_name=prefix, problem="expected an object")
        ref = _require_str(raw, "ref", line_number=line_number, field_name=f"{prefix}.ref")
        for key in ("title", "body", "source"):
            if raw.get(key) is not None and not isinstance(raw[key], str):
                raise SetFormatError(line_number=line_number, field_name=f"{prefix}.{key}", problem="not a string")
        # Unknown sources are kept as given (as detect_conflicts does); rules treat them as non-official.
        source = raw.get("source") or "faq"
        title, body = raw.get("title") or "", raw.get("body") or ""
        articles[ref] = ArticleText(
            ref=ref,
            title=title,
            body=body,
            updated_at=_parse_date(raw.get("updated_at"), line_number=line_number, field_name=f"{prefix}.updated_at"),
            source=source,
        )

    raw_conflicts = data.get("conflicts")
    if not isinstance(raw_conflicts, list):
        raise SetFormatError(line_number=line_number, field_name="conflicts", problem="missing or not a list")
    conflicts = []
    for index, raw in enumerate(raw_conflicts):
        prefix = f"conflicts[{index}]"
        refs = raw.get("refs") if isinstance(raw, dict) else None
        if not isinstance(refs, list) or len(refs) != 2 or not all(isinstance(ref, str) for ref in refs) or refs[0] == refs[1]:
            raise SetFormatError(line_number=line_number, field_name=f"{prefix}.refs", problem="expected two distinct refs")
        unknown = [ref for ref in refs if ref not in articles]
        if unknown:
            raise SetFormatError(
                line_number=line_number, field_name=f"{prefix}.refs", problem=f"{unknown} not among the line's articles"
            )
        conflict_type = raw.get("type") or "other"
        if not isinstance(conflict_type, str):
            raise SetFormatError(line_number=line_number, field_name=f"{prefix}.type", problem="must be a string")
        snippets = raw.get("snippets") or {}
        if not isinstance(snippets, dict) or not all(isinstance(value, str) for value in snippets.values()):
            raise SetFormatError(line_number=line_number, field_name=f"{prefix}.snippets", problem="must map refs to strings")
        conflicts.append(ConflictRequest(refs=pair_key(*refs), type=conflict_type, snippets=dict(snippets)))
    return RetrievalSet(id=set_id, now=now, articles=articles, conflicts=conflicts)


def suggest_for_set(
    *, retrieval_set: RetrievalSet, rules: Sequence[Rule], min_confidence: float | None = None,
    priors: Priors | None = None,
) -> list[Suggestion]:
    """One suggestion per listed conflict; below `min_confidence` (default: the threshold chosen on the dev
    half) the suggestion is "cannot tell"."""
    min_confidence = default_threshold() if min_confidence is None else min_confidence
    return [
        suggest(
            a=retrieval_set.articles[request.refs[0]],
            b=retrieval_set.articles[request.refs[1]],
            conflict_type=request.type,
            now=retrieval_set.now,
            rules=rules,
            snippets=request.snippets,
            min_confidence=min_confidence,
            priors=priors,
        )
        for request in retrieval_set.conflicts
    ]


def output_line(*, retrieval_set: RetrievalSet, suggestions: Sequence[Suggestion]) -> dict:
    return {"id": retrieval_set.id, "suggestions": [suggestion.as_json() for suggestion in suggestions]}

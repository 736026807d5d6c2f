"""Turning stored text into safe HTML for the console.

Every function escapes the text itself and adds only its own tags; article and reply text is never
marked safe as it stands.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from django.utils.html import escape

from articles.models import ArticleVersion
from django.utils.safestring import SafeString, mark_safe

_TOKENS = re.compile(r"\s+|[^\s]+")


def highlight(*, text: str, snippet: str) -> tuple[SafeString, bool]:
    """The text, escaped, with the first occurrence of the snippet wrapped in <mark>.

    The snippet is matched ignoring case and runs of whitespace (detectors normalise spacing).
    Returns (html, found).
    """
    words = snippet.split()
    if not words:
        return escape(text), False
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)
    match = pattern.search(text)
    if match is None:
        return escape(text), False
    start, end = match.span()
    html = f"{escape(text[:start])}<mark>{escape(text[start:end])}</mark>{escape(text[end:])}"
    return mark_safe(html), True  # noqa: S308 - each piece is escaped above


@dataclass
class Diff:
    html: SafeString
    changed: bool
    added: int
    removed: int


def diff_html(*, old: str, new: str) -> Diff:
    """A word-level inline diff: removed words in <del>, added ones in <ins>, all text escaped."""
    old_tokens, new_tokens = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(a=old_tokens, b=new_tokens, autojunk=False)
    parts: list[str] = []
    added = removed = 0
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(escape("".join(old_tokens[a1:a2])))
            continue
        if op in ("delete", "replace"):
            removed += sum(1 for t in old_tokens[a1:a2] if not t.isspace())
            parts.append(f"<del>{escape(''.join(old_tokens[a1:a2]))}</del>")
        if op in ("insert", "replace"):
            added += sum(1 for t in new_tokens[b1:b2] if not t.isspace())
            parts.append(f"<ins>{escape(''.join(new_tokens[b1:b2]))}</ins>")
    return Diff(html=mark_safe("".join(parts)), changed=bool(added or removed), added=added, removed=removed)  # noqa: S308


@dataclass
class ChartBar:
    x: float
    y: float
    height: float
    width: float
    value: int
    kind: str


@dataclass
class Chart:
    width: int
    height: int
    plot_height: int
    bars: list[ChartBar]
    labels: list[tuple[float, str]]
    max_value: int


def bar_chart(*, days, width: int = 560, height: int = 180) -> Chart:
    """Geometry for a server-rendered SVG of opened vs resolved per day (two bars per day)."""
    plot_height = height - 24
    max_value = max([1] + [max(d.opened, d.resolved) for d in days])
    slot = width / max(len(days), 1)
    bar_width = max(slot / 2 - 3, 2)
    bars: list[ChartBar] = []
    labels: list[tuple[float, str]] = []
    for i, day in enumerate(days):
        for j, (kind, value) in enumerate((("opened", day.opened), ("resolved", day.resolved))):
            bar_height = plot_height * value / max_value
            bars.append(
                ChartBar(
                    x=round(i * slot + 2 + j * (bar_width + 1), 1),
                    y=round(plot_height - bar_height, 1),
                    height=round(bar_height, 1),
                    width=round(bar_width, 1),
                    value=value,
                    kind=kind,
                )
            )
        labels.append((round(i * slot + slot / 2, 1), day.day.strftime("%d %b")))
    return Chart(width=width, height=height, plot_height=plot_height, bars=bars, labels=labels, max_value=max_value)


def stale_message(exc) -> str:
    """A stale-edit refusal in the reviewer's terms: version numbers (v2, v3), never database ids."""
    article = exc.article
    numbers = dict(
        ArticleVersion.objects.filter(pk__in=[exc.expected_version_id or 0, article.current_version_id or 0]).values_list(
            "pk", "number"
        )
    )
    opened = numbers.get(exc.expected_version_id)
    current = numbers.get(article.current_version_id)
    opened_text = f"v{opened}" if opened else "an older version"
    return (
        f"“{article.title}” was changed by someone else since you opened it: you edited {opened_text}, "
        f"the current one is v{current}. Reload it and apply your change again."
    )

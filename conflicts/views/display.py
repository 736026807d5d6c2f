"""Turning stored text into safe HTML for the console.

Every function escapes the text itself and adds only its own tags; article and reply text is never
marked safe as it stands.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from articles.selectors import version_numbers

_TOKENS = re.compile(r"\s+|[^\s]+")


# Article bodies are Markdown written by anyone who can edit the knowledge base: raw HTML in them
# stays text (html=False), and the rendered HTML is sanitised again with nh3 before it is marked safe.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
_MARKDOWN_TAGS = {
    "p", "br", "hr", "strong", "em", "b", "i", "s", "del", "ins", "mark", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}
# Private-use characters mark the snippet in the source text, so the <mark> survives Markdown rendering.
_MARK_START, _MARK_END = "\ue000", "\ue001"


def _snippet_span(text: str, snippet: str) -> tuple[int, int] | None:
    """Where the snippet is in the text, ignoring case and runs of whitespace (detectors normalise spacing)."""
    words = snippet.split()
    if not words:
        return None
    match = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE).search(text)
    return match.span() if match else None


def render_markdown(*, text: str, snippet: str = "") -> tuple[SafeString, bool]:
    """The text rendered from Markdown and sanitised, with the snippet's first occurrence in <mark>.
    Returns (html, found)."""
    text = text.replace(_MARK_START, "").replace(_MARK_END, "")
    span = _snippet_span(text, snippet)
    if span:
        start, end = span
        text = f"{text[:start]}{_MARK_START}{text[start:end]}{_MARK_END}{text[end:]}"
    html = _MARKDOWN.render(text).replace(_MARK_START, "<mark>").replace(_MARK_END, "</mark>")
    clean = nh3.clean(
        html,
        tags=_MARKDOWN_TAGS,
        # An ordered list keeps its first number: a PDF's "2. Refunds" is a list starting at 2 (without
        # `start` every numbered section of a policy read "1.").
        attributes={"a": {"href", "title"}, "ol": {"start"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean), span is not None  # noqa: S308 - sanitised by nh3 just above


def markdown_text(text: str, *, separator: str = "\n") -> str:
    """The words of a Markdown text without its markup (a heading's "#", emphasis, link targets), one block
    per `separator`: for snippets and side-by-side texts shown as plain text (Django escapes them). Read from
    markdown-it's token stream, so it follows the same parser as the rendered article; list items keep
    their number or bullet."""
    blocks: list[str] = []
    prefix = ""
    for token in _MARKDOWN.parse(text.replace(_MARK_START, "").replace(_MARK_END, "")):
        if token.type == "list_item_open":
            prefix = f"{token.info}{token.markup} " if token.info else "- "
        elif token.type in ("fence", "code_block"):
            blocks.append(token.content.rstrip("\n"))
        elif token.type == "inline":
            words = "".join(
                child.content if child.type in ("text", "code_inline") else " " if child.type.endswith("break") else ""
                for child in token.children or []
            )
            blocks.append(prefix + " ".join(words.split()))
            prefix = ""
    return separator.join(block for block in blocks if block.strip())


RATIO_SHOWN_UP_TO = 1000.0  # beyond this a likelihood ratio is words, not a number nobody can read


def likelihood_words(ratio: float) -> str:
    """A likelihood ratio as a reader takes it in: "×3.2 as likely", "far more likely (over ×1,000)" past
    RATIO_SHOWN_UP_TO (the decoder reports ratios up to e^700), "less likely (×0.25)" below one."""
    if math.isnan(ratio):
        return "no clear preference"
    if ratio >= RATIO_SHOWN_UP_TO:
        return f"far more likely (over ×{RATIO_SHOWN_UP_TO:,.0f})"
    if ratio >= 1:
        return f"×{ratio:.3g} as likely"
    if ratio * RATIO_SHOWN_UP_TO <= 1:
        return f"far less likely (under ×{1 / RATIO_SHOWN_UP_TO:g})"
    return f"less likely (×{ratio:.2g})"


def with_titles(*, text: str, titles: dict[str, str]) -> str:
    """The text with article refs (as detectors write them) replaced by the articles' titles."""
    refs = sorted((ref for ref in titles if ref), key=len, reverse=True)
    if not refs or not text:
        return text
    pattern = re.compile(r"(?<![\w/-])(?:" + "|".join(re.escape(ref) for ref in refs) + r")(?![\w/-])")
    return pattern.sub(lambda m: f"“{titles[m.group(0)]}”", text)


def conflict_explanation(conflict) -> str:
    """A conflict's explanation naming its articles (two, or one for a one-article finding) by title."""
    return with_titles(
        text=conflict.explanation,
        titles={a.external_ref: a.title for a in (conflict.article_low, conflict.article_high) if a is not None},
    )


def with_explanations(conflicts: list) -> list:
    """The conflicts, each with `explanation_display` (conflict_explanation) for a list template."""
    for conflict in conflicts:
        conflict.explanation_display = conflict_explanation(conflict)
    return conflicts


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
class ChartLabel:
    x: float
    text: str
    anchor: str  # SVG text-anchor: "middle" or "end"
    kind: str  # "label" or "today-label" (the CSS class)

    @property
    def span(self) -> tuple[float, float]:
        """Where the text lies on the x axis, by the chart's estimate of a label character's width."""
        width = len(self.text) * LABEL_CHAR_WIDTH
        start = self.x - width / 2 if self.anchor == "middle" else self.x - width
        return start, start + width


# Label text is 10px: a character is at most about 6px wide; labels keep this much space between them.
LABEL_CHAR_WIDTH, LABEL_GAP = 6.0, 6.0


def _day_labels(centres: list[float], texts: list[str], width: float) -> list[ChartLabel]:
    """Date labels that never overlap: "today" under the last day (kept inside the chart), then the
    earlier days from the first on, each only where it clears the one before it and "today"."""
    if not centres:
        return []
    today_width = len("today") * LABEL_CHAR_WIDTH
    today = ChartLabel(x=round(min(width, centres[-1] + today_width / 2), 1), text="today", anchor="end",
                       kind="today-label")
    labels: list[ChartLabel] = []
    for x, text in zip(centres[:-1], texts[:-1]):
        label = ChartLabel(x=x, text=text, anchor="middle", kind="label")
        start, end = label.span
        if start < 0 or end + LABEL_GAP > today.span[0]:
            continue
        if labels and start < labels[-1].span[1] + LABEL_GAP:
            continue
        labels.append(label)
    return labels + [today]


@dataclass
class Chart:
    width: int
    height: int
    plot_height: int
    bars: list[ChartBar]
    labels: list[ChartLabel]
    max_value: int
    today_x: float | None = None  # the centre of today's slot, when today is on the chart


def bar_chart(*, days, width: int = 560, height: int = 190, today=None) -> Chart:
    """Geometry for a server-rendered SVG of opened vs resolved per day (two bars per day), with room
    above the bars for their values."""
    plot_height = height - 24
    top_margin = 12
    usable = plot_height - top_margin
    max_value = max([1] + [max(d.opened, d.resolved) for d in days])
    slot = width / max(len(days), 1)
    bar_width = max(slot / 2 - 3, 2)
    bars: list[ChartBar] = []
    for i, day in enumerate(days):
        for j, (kind, value) in enumerate((("opened", day.opened), ("resolved", day.resolved))):
            bar_height = usable * value / max_value
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
    labels = _day_labels([round(i * slot + slot / 2, 1) for i in range(len(days))],
                         [day.day.strftime("%d %b") for day in days], width)
    today_x = next((round(i * slot + slot / 2, 1) for i, day in enumerate(days) if day.day == today), None)
    return Chart(width=width, height=height, plot_height=plot_height, bars=bars, labels=labels, max_value=max_value,
                 today_x=today_x)


def stale_message(exc) -> str:
    """A stale-edit refusal in the reviewer's terms: version numbers (v2, v3), never database ids."""
    article = exc.article
    numbers = version_numbers(version_ids=[exc.expected_version_id or 0, article.current_version_id or 0])
    opened = numbers.get(exc.expected_version_id)
    current = numbers.get(article.current_version_id)
    opened_text = f"v{opened}" if opened else "an older version"
    return (
        f"“{article.title}” was changed by someone else since you opened it: you edited {opened_text}, "
        f"the current one is v{current}. Reload it and apply your change again."
    )

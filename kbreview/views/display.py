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

"""Quotes an LLM says it took from an article: the schema it answers in, and the check that each
quote really is in the article it names (detection and MACR's Analyzer both rely on it)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from agents.types import ArticleText

# A list of {ref, quote} rather than a {ref: quote} map: strict JSON-schema mode forbids open-ended keys.
QUOTES_SCHEMA: dict = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"ref": {"type": "string"}, "quote": {"type": "string"}},
        "required": ["ref", "quote"],
        "additionalProperties": False,
    },
}


def verified_quotes(
    *, items: Iterable[Mapping], articles: Mapping[str, ArticleText], allowed_refs: Iterable[str]
) -> tuple[dict[str, str], int]:
    """The article's own text for every quote found in an allowed article (first quote per ref wins),
    and how many quotes were dropped (unknown ref, or text not in the article)."""
    allowed = set(allowed_refs)
    found: dict[str, str] = {}
    dropped = 0
    for item in items:
        ref = item["ref"].strip()
        quote = find_in_article(quote=item["quote"], article=articles[ref]) if ref in allowed else None
        if quote is None:
            dropped += 1
        elif ref not in found:
            found[ref] = quote
    return found, dropped


_SPACE = re.compile(r"\s+")


def find_in_article(*, quote: str, article: ArticleText) -> str | None:
    """The article's own text for `quote` when the quote occurs in it up to whitespace, else None."""
    needle = _SPACE.sub(" ", quote).strip()
    if not needle:
        return None
    for text in (article.body, article.title):
        normalised, origin = _normalise_with_map(text)
        start = normalised.find(needle)
        if start >= 0:
            end = start + len(needle) - 1
            return text[origin[start]: origin[end] + 1]
    return None


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    """Whitespace runs collapsed to one space, with the original index of every kept character."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char.isspace():
            if chars and chars[-1] != " ":
                chars.append(" ")
                origin.append(index)
            continue
        chars.append(char)
        origin.append(index)
    return "".join(chars), origin

"""Text from a knowledge base (titles, refs, bodies) goes into prompts as data: it can neither close the
element that delimits it nor break out of an attribute. One home for every prompt builder."""
from __future__ import annotations

import re


def quote_attribute(value: str) -> str:
    """A value for a double-quoted attribute: no quote, angle bracket or entity can end or fake it."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def neutralise_tag(text: str, tag: str, *, replacement: str = "&lt;") -> str:
    """`text` with every `<tag` / `</tag` opening disarmed, so it cannot close or open its delimiter."""
    pattern = re.compile(rf"<\s*/?\s*{re.escape(tag)}\b", re.IGNORECASE)
    return pattern.sub(lambda match: match.group(0).replace("<", replacement), text)

"""Citation tags in replies: which articles a reply actually used."""
from __future__ import annotations

import re

DEFAULT_PATTERN = r"\[\[([A-Za-z0-9_.:/-]+)\]\]"


def cited_refs(*, reply: str, pattern: str = DEFAULT_PATTERN) -> list[str]:
    """Refs named by citation tags in the reply, first mention first, each once."""
    seen: dict[str, None] = {}
    for match in re.finditer(pattern, reply or ""):
        seen.setdefault(match.group(1), None)
    return list(seen)


def citation_tag(ref: str) -> str:
    return f"[[{ref}]]"

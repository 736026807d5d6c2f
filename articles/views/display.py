"""Article changes shown in the console in the reviewer's terms."""
from __future__ import annotations

from articles.selectors import version_numbers


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

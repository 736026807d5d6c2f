"""Template filters for stored text shown as plain text (snippets, passages)."""
from django import template

from kbreview.views.display import likelihood_words, markdown_text

register = template.Library()


@register.filter(name="plain_text")
def plain_text(value) -> str:
    """A Markdown text's words on one line, without its markup (Django escapes the result)."""
    return markdown_text(str(value or ""), separator=" ")


@register.filter(name="likelihood")
def likelihood(value) -> str:
    """A likelihood ratio in words past ×1,000 (see likelihood_words)."""
    try:
        return likelihood_words(float(value))
    except (TypeError, ValueError):
        return "—"

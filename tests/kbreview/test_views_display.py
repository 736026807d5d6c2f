"""Issue 29 (11): stored text shown as it was meant — a PDF's numbered sections keep their numbers, and
Markdown marks never show raw in retrieval snippets."""
import pytest
from django.urls import reverse

from kbreview.views.display import markdown_text, render_markdown
from tests.conflicts.console_support import make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db

# What the PDF reader makes of a policy with numbered sections: each "N. Heading" its own paragraph.
POLICY = "1. Fares\n\nA ticket costs €5.\n\n2. Refunds\n\nRefunds within 24 hours.\n\n3. Pets\n\nDogs travel free."


def test_numbered_sections_keep_their_numbers_on_the_article_page(client, kb):
    article = make_article(kb, "policy", POLICY, title="Policy", index=False)
    client.force_login(make_user("vera", kb, "viewer"))
    html = client.get(reverse("article_detail", args=[article.pk])).content.decode()
    assert '<ol start="2">' in html and '<ol start="3">' in html


def test_a_list_start_is_the_only_attribute_kept_on_lists():
    html, _ = render_markdown(text='4. Fourth\n\n<ol start="9" onclick="x()"><li>raw</li></ol>')
    assert '<ol start="4">' in html and '<ol start="9"' not in html and "<li>raw" not in html  # raw HTML stays text


def test_retrieval_snippets_show_words_not_markdown(client, kb):
    make_article(kb, "faq-pets", "# Travelling with pets\n\nDogs travel **free** on the [outer deck](https://x.example).",
                 title="Pets")
    client.force_login(make_user("rita", kb, "reviewer"))
    html = client.get(reverse("article_list"), {"q": "can I bring my dog", "mode": "retrieval"}).content.decode()
    assert "Travelling with pets Dogs travel free on the outer deck." in html
    assert "# Travelling" not in html and "**free**" not in html and "](https" not in html


def test_markdown_text_keeps_list_numbers_and_code():
    assert markdown_text("## Steps\n\n2. Pay `€5`\n3. Board\n\n- one", separator=" | ") == \
        "Steps | 2. Pay €5 | 3. Board | - one"

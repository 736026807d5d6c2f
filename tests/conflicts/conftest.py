import pytest

from tests.factories import make_article


@pytest.fixture
def fare_articles(kb):
    """Two articles that disagree on a price, and one unrelated."""
    return {
        "old": make_article(kb, "faq-fare-old", "A single adult ticket to Inishmara costs €18.", index=False),
        "new": make_article(kb, "web-fares", "A single adult ticket to Inishmara costs €22.", index=False),
        "pets": make_article(kb, "faq-pets", "Dogs travel free on the outer deck.", index=False),
    }

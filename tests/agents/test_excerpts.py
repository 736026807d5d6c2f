"""agents.excerpts: what the LLM is shown of a pair (aligned claims only), and the pairs whose only close
claims are sentences both articles state word for word (settled without the LLM). Real sentence vectors."""
from __future__ import annotations

import datetime as dt

import pytest

from agents.claims import RELATED_FLOOR, ClaimVectors, detect_claim_conflicts
from agents.detection import run_detection
from agents.excerpts import pair_excerpt
from agents.llm_detector import excerpt_text
from agents.types import ArticleText
from articles.embeddings import embed_texts
from tests.support.scripted_llm import answer, message_text, verdict, verdicts

NOW = dt.date(2025, 3, 1)
SHARED = "Keep your booking reference to hand when you call us."


@pytest.fixture(scope="module")
def store():
    return ClaimVectors(embed_texts)


def hire(body: str = "") -> ArticleText:
    return ArticleText(ref="hire", title="Bike hire", body=(
        "Bike hire\n\nA bike costs €12 per day. Helmets are included at no charge. "
        f"Dogs are welcome on the outer deck. {SHARED}" + body))


def prices() -> ArticleText:
    return ArticleText(ref="prices", title="Prices", body=(
        f"Day prices\n\nHiring a bike costs €15 a day. {SHARED} The last ferry back leaves at 18:00."))


def parking() -> ArticleText:
    return ArticleText(ref="parking", title="Parking", body=f"The car park by the station closes at midnight. {SHARED}")


def test_sentences_both_articles_state_word_for_word_do_not_make_a_pair_related(store):
    about_hire = ArticleText(ref="hire", title="Bike hire", body=f"Bikes are hired by the hour at the kiosk. {SHARED}")
    # The claim detector finds the shared sentence (similarity 1) and calls the pair related ...
    assert detect_claim_conflicts(articles=[about_hire, parking()], vectors=store).pair_similarity[
        ("hire", "parking")] >= RELATED_FLOOR
    # ... but identical sentences agree: nothing else aligns, so there is nothing to contradict.
    excerpt = pair_excerpt(about_hire, parking(), vectors=store, year=NOW.year)
    assert not excerpt.related and excerpt.claims == {"hire": {}, "parking": {}}


def test_an_excerpt_shows_the_aligned_claims_under_their_heading_and_not_the_rest(store):
    excerpt = pair_excerpt(hire(), prices(), vectors=store, year=NOW.year)
    assert excerpt.related
    shown = {ref: [text for _, text in claims.values()] for ref, claims in excerpt.claims.items()}
    assert "A bike costs €12 per day." in shown["hire"] and "Hiring a bike costs €15 a day." in shown["prices"]
    assert SHARED not in shown["hire"] + shown["prices"]  # agreed word for word
    assert "The last ferry back leaves at 18:00." not in shown["prices"]
    text = excerpt_text(excerpt.claims["prices"])
    assert text.splitlines() == ["[...]", "(Day prices)", "Hiring a bike costs €15 a day.", "[...]"]


def test_a_finding_to_confirm_always_shows_its_snippets(store):
    aside = "Groups of ten or more get a discount at the kiosk."
    plain = pair_excerpt(hire(" " + aside), prices(), vectors=store, year=NOW.year)
    assert aside not in [text for _, text in plain.claims["hire"].values()]
    forced = pair_excerpt(hire(" " + aside), prices(), vectors=store, year=NOW.year, must_show={"hire": aside})
    assert aside in [text for _, text in forced.claims["hire"].values()]


def test_the_llm_is_shown_excerpts_and_a_boilerplate_pair_is_not_sent(scripted_llm, store):
    scripted_llm.push(answer(verdicts(verdict("hire", "prices", type="price", explanation="€12 against €15",
                                              snippets={"hire": "A bike costs €12 per day.",
                                                        "prices": "Hiring a bike costs €15 a day."}))))
    outcome = run_detection(articles=[hire(), prices(), parking()], detector="llm", now=NOW,
                            llm_config=scripted_llm.config(), claim_vectors=store)
    (request,) = scripted_llm.requests
    user = message_text(request, "user")
    assert 'ref="hire"' in user and 'ref="parking"' not in user
    assert "\n\n[...]\n" in user.split('ref="hire"')[1].split("</article>")[0]  # an excerpt starts with [...]
    assert "Dogs are welcome on the outer deck." not in user and SHARED not in user
    assert [f.refs for f in outcome.findings] == [("hire", "prices")]
    assert outcome.findings[0].snippets == {"hire": "A bike costs €12 per day.", "prices": "Hiring a bike costs €15 a day."}
    recorded = {j.refs: j.detector for j in outcome.judgements}
    assert recorded[("hire", "parking")] == "claims" and recorded[("parking", "prices")] == "claims"

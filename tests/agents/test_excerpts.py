"""agents.excerpts: what the LLM is shown of a pair (aligned claims only), and the pairs whose only close
claims are sentences both articles state word for word (settled without the LLM). Real sentence vectors."""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from agents.claims import RELATED_FLOOR, ClaimVectors, detect_claim_conflicts
from agents.detection import complete_detection, plan_detection, plan_excerpts, run_detection
from agents.excerpts import claim_pair_key, pair_excerpt
from agents.llm_detector import detect_with_llm, excerpt_text, verdicts_from_result
from agents.types import ArticleText, PairJudgement
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


def test_a_claim_pair_key_is_the_same_in_either_order_and_changes_with_the_heading():
    price, fare = ("Day prices", "Hiring a bike costs €15 a day."), ("", "A bike costs €12 per day.")
    assert claim_pair_key(price, fare) == claim_pair_key(fare, price)
    assert claim_pair_key(price, fare) == claim_pair_key(("day  PRICES", "hiring a bike costs €15 a  day."), fare)
    assert claim_pair_key(price, fare) != claim_pair_key(("Group prices", price[1]), fare)


def test_claim_pairs_judged_consistent_before_are_not_shown_again(store):
    first = pair_excerpt(hire(), prices(), vectors=store, year=NOW.year)
    assert first.related and first.claim_pairs
    # Every aligned claim pair was judged before (in another pair of articles): nothing is left to ask.
    again = pair_excerpt(hire(), prices(), vectors=store, year=NOW.year, settled=first.claim_pairs)
    assert not again.related and again.claims == {"hire": {}, "prices": {}} and not again.claim_pairs
    # A new statement about the same thing is shown, with what it aligns with, and nothing judged before.
    extra = "Electric bikes are charged at the kiosk for €4 per hour."
    newer = pair_excerpt(hire(" " + extra), prices(), vectors=store, year=NOW.year, settled=first.claim_pairs)
    assert newer.related and newer.claim_pairs and not newer.claim_pairs.keys() & first.claim_pairs.keys()
    assert [text for _, text in newer.claims["hire"].values()] == [extra]


def test_a_no_conflict_verdict_makes_the_claim_pairs_shown_consistent_and_settles_later_pairs(scripted_llm, store):
    scripted_llm.push(answer(verdicts(verdict("hire", "prices", conflict=False))))
    config = scripted_llm.config()
    judged = plan_detection(articles=[hire(), prices()], detector="llm", now=NOW, llm_config=config,
                            claim_vectors=store)
    assert judged.unjudged == [("hire", "prices")]
    result = detect_with_llm(articles=judged.articles, pairs=judged.unjudged, config=config, now=NOW,
                             excerpts=judged.shown(judged.unjudged), claim_pairs=judged.claim_pairs)
    outcome = complete_detection(judged, verdicts=verdicts_from_result(result), call=result)
    assert outcome.consistent_claim_pairs == set(judged.claim_pairs[("hire", "prices")]) != set()

    # The same statements in a copy under another ref (same title): settled without a call, as judged by the LLM.
    copy = dataclasses.replace(hire(), ref="hire-copy")
    later = plan_detection(articles=[copy, prices()], detector="llm", now=NOW, llm_config=config, claim_vectors=store,
                           defer_excerpts=True)
    asked = later.candidate_claim_pairs()  # what a caller looks up, once for the whole turn
    plan_excerpts(later, settled=outcome.consistent_claim_pairs & asked)
    assert later.unjudged == [] and later.outcome.known_claim_pairs == 1
    assert later.outcome.judgements == [PairJudgement(refs=("hire-copy", "prices"), conflict=None, detector="llm")]
    assert asked == outcome.consistent_claim_pairs
    assert len(scripted_llm.requests) == 1


def test_a_conflict_verdict_makes_nothing_consistent(scripted_llm, store):
    scripted_llm.push(answer(verdicts(verdict("hire", "prices", type="price", explanation="€12 against €15",
                                              snippets={"hire": "A bike costs €12 per day.",
                                                        "prices": "Hiring a bike costs €15 a day."}))))
    outcome = run_detection(articles=[hire(), prices()], detector="llm", now=NOW, llm_config=scripted_llm.config(),
                            claim_vectors=store)
    assert [f.refs for f in outcome.findings] == [("hire", "prices")] and outcome.consistent_claim_pairs == set()


def test_one_template_sentence_on_two_products_own_pages_is_nothing_to_compare(store):
    def page(ref: str, product: str, extra: str = "") -> ArticleText:
        return ArticleText(ref=ref, title=f"{product} Plan: help", body=(
            f"Questions about the {product} Plan are answered by our help team within a day.{extra}"))

    siblings = pair_excerpt(page("lite", "Lite"), page("max", "Max"), vectors=store, year=NOW.year)
    assert not siblings.related and siblings.claims == {"lite": {}, "max": {}}
    # The same swap in pages that do not name those products in their titles: the copies disagree on a name.
    unnamed = [dataclasses.replace(page(ref, product), title="Help") for ref, product in (("lite", "Lite"), ("max", "Max"))]
    assert pair_excerpt(*unnamed, vectors=store, year=NOW.year).related


def test_a_no_conflict_between_two_products_pages_says_nothing_of_two_versions_of_one_page(scripted_llm, store):
    def page(ref: str, title: str, fee: str) -> ArticleText:
        return ArticleText(ref=ref, title=title, body=f"The monthly fee is {fee}. Cancel at any time in the app.")

    scripted_llm.push(answer(verdicts(verdict("lite", "max", conflict=False))))  # different plans: no conflict
    products = run_detection(articles=[page("lite", "Lite plan", "€10"), page("max", "Max plan", "€20")],
                             detector="llm", now=NOW, llm_config=scripted_llm.config(), claim_vectors=store)
    assert products.consistent_claim_pairs
    # The same two sentences on an old and a new pricing page: the old price against the new, to be asked.
    versions = plan_detection(articles=[page("old", "Pricing (2023)", "€10"), page("new", "Pricing", "€20")],
                              detector="llm", now=NOW, llm_config=scripted_llm.config(), claim_vectors=store,
                              defer_excerpts=True)
    plan_excerpts(versions, settled=products.consistent_claim_pairs)
    assert versions.unjudged == [("new", "old")] and versions.outcome.known_claim_pairs == 0


def test_claims_cut_from_the_prompt_are_not_judged_consistent(scripted_llm, store, monkeypatch):
    import agents.llm_detector as llm_detector

    plan = plan_detection(articles=[hire(), prices()], detector="llm", now=NOW, llm_config=scripted_llm.config(),
                          claim_vectors=store)
    shown = plan.claim_pairs[("hire", "prices")]
    by_text = {text_a: key for key, ((_, text_a), _) in shown.items()}
    assert set(by_text) == {"A bike costs €12 per day.", "Helmets are included at no charge."}
    # A prompt that holds the whole prices excerpt and the hire excerpt up to its first claim only.
    hire_text, prices_text = (excerpt_text(plan.excerpts[("hire", "prices")][ref]) for ref in ("hire", "prices"))
    cut_at = len(prices_text)
    assert hire_text.index("A bike costs €12 per day.") + 25 <= cut_at < hire_text.index("Helmets") + 34
    monkeypatch.setattr(llm_detector, "MAX_ARTICLE_CHARS", cut_at)
    scripted_llm.push(answer(verdicts(verdict("hire", "prices", conflict=False))))
    result = detect_with_llm(articles=plan.articles, pairs=plan.unjudged, config=scripted_llm.config(), now=NOW,
                             excerpts=plan.shown(plan.unjudged), claim_pairs=plan.claim_pairs)
    assert result.consistent_claim_pairs == {by_text["A bike costs €12 per day."]}


def test_a_claim_pair_shown_for_a_pair_judged_a_conflict_is_not_consistent_even_if_another_pair_was_not(scripted_llm, store):
    copy = dataclasses.replace(prices(), ref="prices-copy")  # the same page twice: every claim pair is shared
    scripted_llm.push(answer(verdicts(verdict("hire", "prices", type="price", explanation="€12 against €15",
                                              snippets={"hire": "A bike costs €12 per day.",
                                                        "prices": "Hiring a bike costs €15 a day."}))))
    # (hire, prices-copy) left out of the answer: "no conflict" by the prompt's rule, yet it shows the same claims.
    outcome = run_detection(articles=[hire(), prices(), copy], detector="llm", now=NOW, llm_config=scripted_llm.config(),
                            claim_vectors=store)
    assert [f.refs for f in outcome.findings] == [("hire", "prices")]
    assert ("hire", "prices-copy") in outcome.judged_pairs and outcome.consistent_claim_pairs == set()


@pytest.mark.parametrize("answer_given", ["conflict on the copy", "copy under doubt"])
def test_sentences_in_doubt_elsewhere_in_the_call_are_not_consistent_under_any_title(scripted_llm, store, answer_given):
    """A copy of the prices page under another title shows the same two sentences with another key: a conflict
    found on it, or a dropped item that leaves it unjudged, keeps them out of the consistent claim pairs."""
    copy = dataclasses.replace(prices(), ref="prices-copy", title="Prices from 2026")
    if answer_given == "conflict on the copy":
        item = verdict("hire", "prices-copy", type="price", explanation="€12 against €15",
                       snippets={"hire": "A bike costs €12 per day.", "prices-copy": "Hiring a bike costs €15 a day."})
    else:  # an item naming a ref that is not in the call: the copy's pairs stay unjudged
        item = verdict("prices-copy", "no-such-article", conflict=False)
    scripted_llm.push(answer(verdicts(item)))
    outcome = run_detection(articles=[hire(), prices(), copy], detector="llm", now=NOW, llm_config=scripted_llm.config(),
                            claim_vectors=store)
    assert ("hire", "prices") in outcome.judged_pairs  # left out of the answer: "no conflict"
    assert outcome.consistent_claim_pairs == set()

"""agents.claims.compare: comparing two aligned claims (values, polarity, channels, near-copies) and the
passes beyond alignment (transposed numbers, prices of one named thing, numbers of one named place, announced
changes). Some cases go through the whole detector, as the sentence model's alignment decides what is compared.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from agents.claims.compare import (
    NAMED_CONTACT_CONFIDENCE,
    Contradiction,
    announced_changes,
    own_page_siblings,
    transposed_contact,
)
from agents.claims.subject import Relation
from agents.types import ArticleText

from .support import NOW, detect_claim_conflicts, found, pair
from .support import claim as _claim


def test_a_channel_counts_against_the_action_the_heading_names(vectors):
    # "switched on" and "activate" share no word; the heading both claims stand under names the action.
    denied = "Quillo Fibre is switched on by a technician at your home, never from the app."
    activated = pair(denied, "You activate Quillo Fibre yourself in the app, under Settings and then Start.",
                     first_title="Quillo Fibre: activation", second_title="Quillo Fibre: activation")
    assert [(f.refs, f.type) for f in found(activated, vectors)] == [(("kb-1", "kb-2"), "procedure")]
    # A claim on the same page about another action done in the app (its product's name in capitals) is no denial.
    other_action = pair("Our Quillo SIM team reads every message sent through the chat in the app.",
                        denied.replace("Fibre", "SIM"), first_title="Quillo SIM: activation",
                        second_title="Quillo SIM: activation")
    assert found(other_action, vectors) == []


def test_a_template_sentence_on_each_products_own_page_is_no_name_swap(vectors):
    articles = pair("Our Lite Broadband team answers every message sent through the chat in the app.",
                    "Our Max Broadband team answers every message sent through the chat in the app.",
                    first_title="Lite Broadband: support", second_title="Max Broadband: support")
    assert found(articles, vectors) == []
    edited_copy = pair(articles[0].body, articles[1].body, first_title="Support", second_title="Support team")
    assert [f.type for f in found(edited_copy, vectors)] == ["other"]


def test_sibling_pages_from_one_template_do_not_conflict(vectors):
    # Counts of a noun no parser reads: only the near-copy comparison sees them; the titles set the pages apart.
    articles = pair("In summer the lake boat makes 6 return sailings a day, and in winter 2.",
                    "In summer the lake boat makes 9 return sailings a day, and in winter 4.",
                    first_title="Route: Ashby jetty", second_title="Route: Kelso jetty")
    assert found(articles, vectors) == []
    one_topic = pair(articles[0].body, articles[1].body, first_title="Lake boat", second_title="Lake boat timetable")
    assert [f.type for f in found(one_topic, vectors)] == ["quantity"]


def test_one_denied_word_counts_when_both_statements_are_about_the_same_thing():
    from agents.claims.analysis import analyse_text
    from agents.claims.compare import _denies_what_other_affirms

    def claim(text):
        return analyse_text("Notes", text, 2026)[0]

    denied = claim("Harbour passes are non-refundable, so plan your week before buying one at the kiosk.")
    same_subject = claim("Harbour passes can be refunded up to a day before you travel.")
    other_subject = claim("Parking permits can be refunded up to a day before you travel.")
    assert _denies_what_other_affirms(denied, same_subject, 0.5)
    assert not _denies_what_other_affirms(denied, other_subject, 0.5)


def test_loosely_aligned_values_count_when_said_of_the_same_named_thing():
    # A table cell under a bare "Price" column has no words next to its value; its row label is its subject.
    from agents.claims.analysis import analyse_text
    from agents.claims.compare import _value_contradiction

    cell = analyse_text("Fees", "| Service | Price |\n|---|---|\n| Full groom (45 minutes) | €38 |", 2026)[0]
    same = analyse_text("Grooming", "A full groom with one of our stylists costs €32 and takes about 45 minutes.", 2026)[0]
    other = analyse_text("Grooming", "A nail trim with one of our stylists costs €32 and takes about 45 minutes.", 2026)[0]
    hit = _value_contradiction(cell, same, 0.55, heads_must_match=True)
    assert hit is not None and hit[0] == "money" and (hit[2], hit[3]) == ("€38", "€32")
    assert _value_contradiction(cell, other, 0.55, heads_must_match=True) is None


def test_a_loosely_aligned_denial_of_what_the_other_claim_permits_is_reported():
    from agents.claims import REPORT_MIN_CONFIDENCE
    from agents.claims.compare import compare_claims

    denial, denial_scope = _claim("We can't accept gift cards or coupons at the till.")
    permits, permits_scope = _claim("Good news: you can now pay with a gift card in every shop.")
    instructs, instructs_scope = _claim("Show your gift card at the till before you pay.")
    hit = compare_claims(denial, permits, similarity=0.5, scope_a=denial_scope, scope_b=permits_scope)
    assert hit is not None and hit.confidence >= REPORT_MIN_CONFIDENCE
    miss = compare_claims(denial, instructs, similarity=0.5, scope_a=denial_scope, scope_b=instructs_scope)
    assert miss is None or miss.confidence < REPORT_MIN_CONFIDENCE


def test_age_limits_are_compared_whoever_each_sentence_names():
    from agents.claims import REPORT_MIN_CONFIDENCE
    from agents.claims.compare import compare_claims

    limit, limit_scope = _claim("Evening workshops: minimum age 18.", title="Workshops and fees")
    other, other_scope = _claim("Participants must be 17 or over.", title="Pottery for beginners")
    hit = compare_claims(limit, other, similarity=0.6, scope_a=limit_scope, scope_b=other_scope)
    assert hit is not None and hit.type == "eligibility" and hit.confidence >= REPORT_MIN_CONFIDENCE
    # Audiences on one axis still set two limits apart.
    child, child_scope = _claim("Children must be 8 or over to join a workshop.")
    adult, adult_scope = _claim("Adults must be 18 or over to join a workshop.")
    assert compare_claims(child, adult, similarity=0.8, scope_a=child_scope, scope_b=adult_scope) is None


def test_one_template_line_on_sibling_pages_is_each_pages_own(vectors):
    siblings = pair("Front desk: 0161 496 0123\nWe open at 08:00 on weekdays.",
                    "Front desk: 0161 496 0456\nWe open at 08:00 on weekdays.",
                    first_title="Northgate studio", second_title="Riverside studio")
    assert found(siblings, vectors) == []
    one_studio = pair(siblings[0].body, siblings[1].body, first_title="Northgate studio", second_title="Contact details")
    assert [f.type for f in found(one_studio, vectors)] == ["contact"]


def test_a_value_quoted_as_the_usual_one_agrees_and_adds_an_exception():
    from agents.claims import REPORT_MIN_CONFIDENCE
    from agents.claims.compare import compare_claims

    usual, usual_scope = _claim("Take 30% off your first lesson and 10% off the next two.", title="Welcome offer")
    exception, exception_scope = _claim("Pupils you introduce take 40% off their first lesson instead of our usual 30%.",
                                        title="Introduce a pupil")
    changed, changed_scope = _claim("You now take 40% off your first lesson, up from 30%.", title="Offer update")
    hit = compare_claims(usual, exception, similarity=0.8, scope_a=usual_scope, scope_b=exception_scope)
    assert hit is None or hit.confidence < REPORT_MIN_CONFIDENCE
    change = compare_claims(usual, changed, similarity=0.8, scope_a=usual_scope, scope_b=changed_scope)
    assert change is not None and change.confidence >= REPORT_MIN_CONFIDENCE


def test_unlimited_denies_an_allowance_not_a_length():
    from agents.claims.compare import _unlimited_contradiction

    unlimited = _claim("Every plan comes with unlimited studio sessions.")[0]
    allowance = _claim("Every plan comes with up to 6 sessions in the studio.")[0]
    per_period = _claim("Every plan comes with 8 sessions a month in the studio.")[0]
    length = _claim("A studio session (45 minutes) is led by a coach.")[0]
    assert _unlimited_contradiction(unlimited, allowance) is not None
    assert _unlimited_contradiction(unlimited, per_period) is not None
    assert _unlimited_contradiction(unlimited, length) is None


def test_daily_hours_are_compared_day_by_day(vectors):
    daily = "The café is open daily from 8 to 5 pm."
    differs_at_weekends = pair(daily, "Café: 08:00-17:00 Monday to Friday, 09:00-17:00 Saturday and Sunday.",
                               first_title="Our café", second_title="Visitor guide")
    assert [f.type for f in found(differs_at_weekends, vectors)] == ["hours"]
    same_every_day = pair(daily, "Café: 08:00-17:00 Monday to Friday, 08:00-17:00 Saturday and Sunday.",
                          first_title="Our café", second_title="Visitor guide")
    assert found(same_every_day, vectors) == []


def test_a_price_with_its_stated_tax_rate_is_compared_before_and_after_tax(vectors):
    taxed = "Our prices exclude 20% VAT, so a locker costs £36 a month including VAT."
    assert [f.type for f in found(pair(taxed, "A locker costs £25 a month."), vectors)] == ["price"]
    assert found(pair(taxed, "A locker costs £30 a month."), vectors) == []  # the net figure
    assert found(pair(taxed, "A locker costs £36 a month."), vectors) == []  # the gross figure
    assert found(pair("A locker costs £36 a month including VAT.", "A locker costs £25 a month."), vectors) == []  # no rate


def test_prices_of_one_named_thing_compare_however_differently_worded(vectors):
    table = "| Course | Lessons per week | Price per week |\n|---|---|---|\n| Evening pottery | 3 | $40 |\n| Life drawing | 2 | $30 |"
    page = ("Shape clay on the wheel with a potter who has taught for twenty years; beginners welcome. "
            "The course costs $35 per week, and you can stay for anything from 1 to 10 weeks.")
    same = pair(table, page, first_title="Course fees 2026", second_title="Evening pottery")
    assert [f.type for f in found(same, vectors)] == ["price"]
    other = pair(table, page, first_title="Course fees 2026", second_title="Weekend ceramics")
    assert found(other, vectors) == []


def test_two_numbers_for_one_named_place_conflict_however_differently_worded(vectors):
    # Three articles, so that the place's name is the knowledge base's own, not the business's (named on most pages).
    unrelated = ArticleText(ref="kb-3", title="Gift cards", body="Gift cards are sold in any amount from $10.",
                            updated_at=dt.date(2026, 2, 1))
    call = ("Prescriptions are ready two hours after you order them. If one is missing, the team at Elm Yard will chase it "
            "for you: ring 0161 496 0720.")
    listed = "Opening times and numbers.\n\nElm Yard: 0161 496 0755"
    same = [*pair(call, listed, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    # Found by the pass for numbers of one named place (its confidence), not by claims that align.
    assert [(f.refs, f.type, f.confidence) for f in found(same, vectors)] == [
        (("kb-1", "kb-2"), "contact", NAMED_CONTACT_CONFIDENCE)]
    other_line = "Opening times and numbers.\n\nElm Yard travel clinic: 0161 496 0755"
    another_purpose = [*pair(call, other_line, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(another_purpose, vectors) == []
    other_place = "Opening times and numbers.\n\nBirch Lane: 0161 496 0755"
    different = [*pair(call, other_place, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(different, vectors) == []
    both_numbers = "Opening times and numbers.\n\nElm Yard: 0161 496 0755 or 0161 496 0720"
    agreeing = [*pair(call, both_numbers, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(agreeing, vectors) == []


def test_an_announced_move_makes_the_other_articles_statement_old(vectors):
    moved = "Where is the ticket kiosk?\nOur ticket kiosk has moved. You now buy tickets from the machines by the car park."
    stated = "Ticket kiosk: next to platform 2, staffed daily 07:00-19:00."
    assert [f.refs for f in found(pair(stated, moved, first_title="Station guide", second_title="Buying tickets"), vectors)] == [
        ("kb-1", "kb-2")]
    other = "Lost property: ask at the station office, staffed daily 07:00-19:00."
    assert found(pair(other, moved, first_title="Station guide", second_title="Buying tickets"), vectors) == []


def test_the_days_after_an_every_day_label_are_the_hours_own(vectors):
    # "seven days a week:" names every day, but the Sunday hours are the ones after "and on Sundays".
    articles = pair("Mon-Sat 09:00-19:00, Sun 12:00-16:00.",
                    "Open seven days a week: Monday to Saturday from 9 am until 7 pm, and on Sundays "
                    "from 11 am until 3 pm.", first_title="Opening times", second_title="Find us")
    # Day attribution is under test, not how sure the finding is: report any confidence.
    findings = detect_claim_conflicts(articles=articles, now=NOW, vectors=vectors, min_confidence=0.1).findings
    assert [(f.refs, f.type) for f in findings] == [(("kb-1", "kb-2"), "hours")]
    assert "12:00 / 16:00" in findings[0].explanation and "11 am / 3 pm" in findings[0].explanation


def test_the_same_hours_written_with_abbreviated_days_agree(vectors):
    assert detect_claim_conflicts(min_confidence=0.1, now=NOW, vectors=vectors, articles=pair("Mon-Sat 09:00-19:00, Sun 11:00-15:00.",
                      "Open seven days a week: Monday to Saturday from 9 am until 7 pm, and on Sundays "
                      "from 11 am until 3 pm.", first_title="Opening times", second_title="Find us")).findings == []


def test_hours_compared_day_by_day_are_not_doubted_as_of_an_unknown_subject():
    from agents.claims.analysis import analyse_text
    from agents.claims.compare import UNKNOWN_SUBJECT_STRENGTH, _value_contradiction

    timetable = analyse_text("Visiting us", "Monday-Friday 08:00-18:00 | Saturday 09:00-12:00", 2026)[0]
    with_days = analyse_text("Help centre", "Monday to Friday we're open from 8 am to 7 pm, and on Saturday from 9 am "
                                            "to noon.", 2026)[0]
    kind, strength, said_timetable, said_sentence = _value_contradiction(timetable, with_days, 0.72)
    assert kind == "clock" and "18:00" in said_timetable and "7 pm" in said_sentence
    assert strength > 0.8 * UNKNOWN_SUBJECT_STRENGTH  # one end of a range moved (0.8), not damped further


def test_a_noun_made_narrower_only_by_its_own_pages_title_is_the_same_thing():
    from agents.claims.analysis import analyse_text
    from agents.claims.compare import _subject_relation

    free = analyse_text("Getting here", "Our free minibus leaves from the square every hour.", 2026)[0]
    priced = analyse_text("Town minibus", "The minibus costs £3 each way.", 2026)[0]
    named = analyse_text("Getting here", "A night minibus costs £5 each way.", 2026)[0]
    assert _subject_relation(free, free.values[0], priced, priced.values[0]) is Relation.SAME
    # Words the sentence itself says still make it narrower.
    assert _subject_relation(priced, priced.values[0], named, named.values[0]) is not Relation.SAME


def test_a_finding_of_a_type_the_console_does_not_know_is_refused():
    one, other = _claim("Bike hire costs £12 a day.")[0], _claim("Bike hire is £15 a day.")[0]
    assert Contradiction("price", 0.7, "£12", "£15", one, other).type == "price"
    with pytest.raises(ValueError, match="'weather'"):
        Contradiction("weather", 0.7, "£12", "£15", one, other)


def test_a_phone_number_with_two_neighbouring_digits_swapped_is_a_mistyped_copy():
    desk = _claim("Call the booking desk on 0117 496 0382.")[0]
    swapped = _claim("Bookings: 0117 496 0328.")[0]
    far_apart = _claim("Bookings: 0117 496 0283.")[0]  # the same digits, but not one swap of neighbours
    hit = transposed_contact([desk], [swapped])
    assert (hit.type, hit.said_a, hit.said_b) == ("contact", "0117 496 0382", "0117 496 0328")
    assert transposed_contact([desk], [far_apart]) is None
    assert transposed_contact([desk], [desk]) is None  # the same number agrees


def test_an_announced_move_makes_the_statement_of_that_thing_old():
    moved, moved_scope = _claim("Our bike workshop has moved.")
    stated, stated_scope = _claim("Bike workshop: under the station arch, open 8-6.")
    other, other_scope = _claim("Left luggage: under the station arch, open 8-6.")
    close = np.array([[0.45]])
    hit = announced_changes([moved], [stated], close, [moved_scope], [stated_scope])
    assert (hit.type, hit.said_a, hit.said_b) == ("procedure", moved.claim.text, stated.claim.text)
    assert announced_changes([moved], [other], close, [moved_scope], [other_scope]) is None
    assert announced_changes([moved], [stated], np.array([[0.2]]), [moved_scope], [stated_scope]) is None


def test_a_template_sentence_that_names_its_own_page_is_a_sibling_not_a_copy():
    juniper = _claim("Our Juniper team answers every email within a day.", title="Juniper plan: support")[0]
    sequoia = _claim("Our Sequoia team answers every email within a day.", title="Sequoia plan: support")[0]
    elsewhere = _claim("Our Sequoia team answers every email within a day.", title="Support")[0]
    assert own_page_siblings(juniper, sequoia)
    assert not own_page_siblings(juniper, elsewhere)

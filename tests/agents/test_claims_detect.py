"""detect_claim_conflicts on hand-written articles: every fact type, near-misses, polarity, output shape."""
import datetime as dt

import pytest

from agents.claims import detect_claim_conflicts
from agents.types import ArticleText

NOW = dt.date(2027, 6, 1)


def art(ref: str, body: str, title: str = "Help") -> ArticleText:
    return ArticleText(ref=ref, title=title, body=body, updated_at=dt.date(2027, 1, 1))


def detect(*articles: ArticleText):
    return detect_claim_conflicts(articles=list(articles), now=NOW)


CONFLICTS = [
    ("price", "A day pass costs €12.", "A day pass costs €15."),
    ("contact", "For lost property, call our lost property line on 0203 555 7700.",
     "Lost property line: 0203 555 7799."),
    ("contact", "Email our complaints desk: complaints@pinecrest.example",
     "Complaints desk email: grievances@pinecrest.example"),
    ("hours", "Riverside pool opening hours: Monday to Friday 07:00-21:00.",
     "Our Riverside pool is open from 7 am to 8 pm, Monday to Friday."),
    ("date", "The Winter Membership Drive ends on 15 January 2028.",
     "The Winter Membership Drive has been extended and now ends on 31 January 2028."),
    ("quantity", "Every rowing machine comes with a 2-year warranty on the frame.",
     "Rowing machine frames are covered by a 5-year warranty."),
    ("eligibility", "Members aged 16 and over can use the sauna.", "The sauna can be used by members aged 18 and over."),
    ("policy", "Locker deposits are refundable when you return the key.", "Locker deposits are non-refundable."),
    ("procedure", "You can book squash courts online in the members area.",
     "Squash courts can't be booked online; please ask at the front desk."),
]


@pytest.mark.parametrize("ctype,body_a,body_b", CONFLICTS, ids=[c[0] + str(i) for i, c in enumerate(CONFLICTS)])
def test_each_fact_type_conflict_is_found(ctype, body_a, body_b):
    [finding] = detect(art("kb-2", body_a), art("kb-1", body_b))
    assert finding.type == ctype
    assert finding.refs == ("kb-1", "kb-2")
    assert finding.snippets["kb-2"] in body_a and finding.snippets["kb-1"] in body_b
    assert finding.explanation


NEAR_MISSES = {
    "same value, other format (money)": ("A towel hire costs €3.", "A towel hire costs 3.00 EUR."),
    "same value, other format (duration)": ("Cancel memberships within 2 weeks of joining for a full refund.",
                                            "Cancel memberships within 14 days of joining for a full refund."),
    "same value, other format (clock)": ("The gym is open Monday to Friday 9 am-5 pm.",
                                         "The gym is open Monday to Friday 09:00-17:00."),
    "approximate agrees with exact": ("New cards arrive in about 3 days.", "New cards arrive in 72 hours."),
    "different plans": ("Gold Plan: €40 per month.", "Silver Plan: €25 per month."),
    "different branches": ("Northgate studio opening hours: Monday to Friday 08:00-20:00.",
                           "Southbank studio opening hours: Monday to Friday 09:00-17:00."),
    "holiday vs regular hours": ("Our pool is open Monday to Friday 07:00-21:00.",
                                 "Christmas opening: our pool is open Monday to Friday 10:00-14:00."),
    "explicitly past statement": ("A day pass costs €15.", "A day pass used to cost €12."),
    "old value with an end date": ("A day pass costs €15 (it was €12 until 1 March 2027).", "A day pass costs €15."),
    "range contains the value": ("Kit orders arrive in 3-5 days.", "Kit orders arrive in 4 days."),
    "rule vs its stated exception": ("Class bookings are refundable.",
                                     "Unlike other bookings, workshop bookings are non-refundable."),
    "exception clause": ("Equipment cannot be returned unless it arrives damaged.",
                         "Damaged equipment can be returned within 30 days."),
    "different department phones": ("Sales line: 0203 555 1000.", "Accounts line: 0203 555 2000."),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_not_flagged(name):
    body_a, body_b = NEAR_MISSES[name]
    assert detect(art("kb-a", body_a), art("kb-b", body_b)) == []


def test_future_effective_article_does_not_conflict_with_current_prices():
    future = art("kb-f", "A day pass costs €18.", title="Price list (effective 1 September 2027)")
    assert detect(future, art("kb-c", "A day pass costs €15.")) == []


def test_polarity_conflicts_on_several_predicates():
    pairs = [
        ("Trial passes are eligible for the spa discount.", "Trial passes are not eligible for the spa discount."),
        ("Unused class packs can be returned for a refund within 30 days.", "Unused class packs are final sale."),
    ]
    for body_a, body_b in pairs:
        [finding] = detect(art("kb-x", body_a), art("kb-y", body_b))
        assert finding.type in ("policy", "eligibility")


def test_result_is_deterministic_and_sorted():
    articles = [art("kb-3", "A day pass costs €12."), art("kb-1", "A day pass costs €15."),
                art("kb-2", "A day pass costs €18.")]
    first = detect(*articles)
    second = detect(*reversed(articles))
    assert [f.refs for f in first] == [("kb-1", "kb-2"), ("kb-1", "kb-3"), ("kb-2", "kb-3")]
    assert [f.as_json() for f in first] == [f.as_json() for f in second]
    for f in first:
        assert list(f.refs) == sorted(f.refs)


def test_duplicate_or_single_articles_give_nothing():
    one = art("kb-1", "A day pass costs €15.")
    assert detect(one) == []
    assert detect(one, one) == []

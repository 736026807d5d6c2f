"""agents.claims.compare: the pair's outright settlements and every rule family run on it, the strongest
finding kept (each family has its own test module: test_value_rules, test_denial_rules, test_places; the
passes over whole articles are in test_article_passes). Every case is written in new wording for these tests
(no data set's sentences or names).
"""
from __future__ import annotations

from .support import claim as _claim


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


def test_every_family_is_read_and_the_strongest_finding_is_the_pairs(monkeypatch):
    from agents.claims import compare

    a, scope_a = _claim("Single lessons cost 40 per hour at the lake.")
    b, scope_b = _claim("Single lessons cost 55 per hour at the lake.")
    seen = []

    def weak(pair):
        seen.append("weak")
        return "policy", 0.3, "a", "b"

    def strong(pair):
        seen.append("strong")
        return "price", 0.7, pair.a.claim.text, pair.b.claim.text

    monkeypatch.setattr(compare, "FAMILIES", (("weak", weak), ("strong", strong), ("none", lambda pair: None)))
    hit = compare.compare_claims(a, b, similarity=0.9, scope_a=scope_a, scope_b=scope_b)
    assert seen == ["weak", "strong"] and hit.type == "price" and hit.confidence == 0.7
    monkeypatch.setattr(compare, "FAMILIES", (("none", lambda pair: None),))
    assert compare.compare_claims(a, b, similarity=0.9, scope_a=scope_a, scope_b=scope_b) is None


def test_the_families_have_one_name_each():
    from agents.claims.compare import FAMILIES

    names = [name for name, _ in FAMILIES]
    assert len(names) == len(set(names)) and "values" in names and "denial" in names

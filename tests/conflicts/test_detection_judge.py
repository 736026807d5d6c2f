"""The product's check with the shipped judge as configured (JUDGE_MODE): a rule finding the judge calls a
difference of scope never reaches the queue; with the rules alone it does. Articles written for this test."""
import pytest

from conflicts.models import Conflict, DetectionOutcome, DetectionRun
from conflicts.services import turn_detect
from conflicts.services.turns import RetrievedRef, turn_report
from tests.factories import make_article


def check(kb, external_id):
    turn, _ = turn_report(knowledge_base=kb, external_id=external_id, question="How long does delivery take?",
                          retrieved=[RetrievedRef(ref="faq-delivery", rank=1), RetrievedRef(ref="web-abroad", rank=2)])
    turn_detect(turn_id=turn.pk)
    return DetectionRun.objects.get(turn=turn)


@pytest.mark.judge
@pytest.mark.django_db
def test_the_judge_vetoes_a_rule_finding_about_another_scope(kb, inline_detection, settings):
    make_article(kb, "faq-delivery", "Standard delivery takes 2 working days.", title="Delivery within the country",
                 index=False)
    make_article(kb, "web-abroad", "Deliveries abroad take 7 to 10 working days.", title="International delivery",
                 index=False)
    settings.JUDGE_MODE = "veto"
    assert check(kb, "judged").outcome == DetectionOutcome.OK
    assert not Conflict.objects.filter(knowledge_base=kb).exists()

    from conflicts.services.detection.detector import _claim_checks_over

    _claim_checks_over.cache_clear()  # a worker configured with the rules alone
    settings.JUDGE_MODE = "rules"
    assert check(kb, "rules-only").outcome == DetectionOutcome.OK
    assert Conflict.objects.filter(knowledge_base=kb).count() == 1

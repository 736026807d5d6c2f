"""The shipped judge (agents/judge_artefact, built by `manage.py train_judge`): it loads from the repository
with no network, and reads statement pairs written for this test (in no corpus) as a reviewer would."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
from django.conf import settings

from agents.judge import StatementPair
from agents.judge_onnx import artefact_present, judge_setup, load_card

# One pair per label, in wording no corpus holds: (heading, text) each side, expected label.
NEW_WORDING = {
    "contradicts": [
        (("Luggage", "Each passenger may bring two suitcases at no charge."),
         ("Baggage rules", "Only one suitcase per passenger travels free; a second costs extra.")),
        (("Visiting hours", "The reading room is open until 8 pm on weekdays."),
         ("Visiting hours", "On weekdays the reading room closes at 6 pm.")),
    ],
    "consistent": [
        (("Returns", "You can send an unused item back within 30 days."),
         ("Returns policy", "Unused items may be returned up to thirty days after delivery.")),
    ],
    "different_scope": [
        (("Student membership", "Students pay £9 a month."),
         ("Standard membership", "Membership costs £25 a month.")),
    ],
    "unrelated": [
        (("Parking", "The car park behind the library is free after 6 pm."),
         ("Gift cards", "Gift cards can be bought online and never expire.")),
    ],
}


@pytest.fixture(scope="module")
def shipped():
    artefact = Path(settings.JUDGE_DIR)
    assert artefact_present(artefact), f"no judge artefact at {artefact}: run manage.py train_judge"
    return judge_setup(artefact, mode="judge")


def test_the_artefact_loads_with_no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network used while loading the judge")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    from agents.judge_onnx import OnnxJudge

    judge = OnnxJudge(Path(settings.JUDGE_DIR))
    scores = judge([StatementPair("Tickets are €5.", "Tickets cost €7.")])
    assert scores.shape == (1, 4)


def test_its_card_says_what_trained_it():
    card = load_card(Path(settings.JUDGE_DIR))
    assert card["pairs"] >= 6000 and card["validation_pairs"] > 0
    assert card["onnx"] in ("int8", "float")
    assert 0 < card["validation"]["all"]["labels"]["contradicts"]["precision"] <= 1


@pytest.mark.parametrize("label", list(NEW_WORDING))
def test_new_wording_is_read_as_a_reviewer_would(shipped, label):
    for (heading_a, text_a), (heading_b, text_b) in NEW_WORDING[label]:
        verdict = shipped.judge.judge([StatementPair(text_a, text_b, heading_a, heading_b)])[0]
        assert verdict.label == label, (text_a, text_b, verdict.probabilities)

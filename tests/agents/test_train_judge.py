"""`manage.py train_judge` end to end on a tiny corpus written for this test: it trains, exports to ONNX,
calibrates, writes its card, and the artefact loads offline as the detector's judge."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from agents.judge import LABELS, StatementPair
from agents.judge_onnx import artefact_present, judge_setup, load_card

PAIRS = [
    ("Harbour Kayaks", ("Rentals", "A single kayak is 20 a day."), ("Prices", "Single kayaks cost 26 per day."), "contradicts"),
    ("Harbour Kayaks", ("Safety", "Life jackets are included."), ("Safety", "Bring your own life jacket; we do not lend them."), "contradicts"),
    ("Harbour Kayaks", ("Hours", "We open at 9 am."), ("Hours", "Doors open at 09:00."), "consistent"),
    ("Harbour Kayaks", ("Groups", "Groups of ten get a guide."), ("Groups", "A guide comes with any group of 10."), "consistent"),
    ("Harbour Kayaks", ("Winter", "In winter we close at 4 pm."), ("Summer", "In summer we close at 8 pm."), "different_scope"),
    ("Harbour Kayaks", ("Juniors", "Under-12s paddle with an adult."), ("Adults", "Adults may paddle alone."), "different_scope"),
    ("Harbour Kayaks", ("Parking", "Parking is free on the quay."), ("Refunds", "Refunds take five days."), "unrelated"),
    ("Harbour Kayaks", ("Lockers", "Lockers take a 1 coin."), ("Wi-Fi", "Wi-Fi is free in the cafe."), "unrelated"),
    ("Ridge Bakery", ("Bread", "Loaves are baked at dawn."), ("Bread", "Our bread is baked every afternoon."), "contradicts"),
    ("Ridge Bakery", ("Orders", "Cakes need two days' notice."), ("Orders", "Order cakes at least 48 hours ahead."), "consistent"),
    ("Ridge Bakery", ("Shop", "The town shop shuts on Sunday."), ("Market stall", "The market stall trades on Sunday."), "different_scope"),
    ("Ridge Bakery", ("Delivery", "Delivery is 3 within town."), ("Allergens", "Nuts are used in our kitchen."), "unrelated"),
]


def write_corpus(path, pairs=PAIRS):
    with path.open("w") as out:
        for business, (heading_a, text_a), (heading_b, text_b), label in pairs:
            out.write(json.dumps({"business": business, "a": {"heading": heading_a, "text": text_a},
                                  "b": {"heading": heading_b, "text": text_b}, "label": label}) + "\n")


@pytest.mark.django_db
def test_train_judge_on_a_tiny_corpus_writes_a_loadable_artefact(tmp_path, capsys):
    corpus, out = tmp_path / "pairs.jsonl", tmp_path / "judge"
    write_corpus(corpus)
    call_command("train_judge", corpus=[corpus], out=out, epochs=1, batch_size=8, validation_share=0.5)
    printed = capsys.readouterr().out
    assert "validation (" in printed and "reliability" in printed and "0.9-precision point" in printed
    assert artefact_present(out)
    card = load_card(out)
    assert card["pairs"] == len(PAIRS) and card["train_pairs"] + card["validation_pairs"] == len(PAIRS)
    assert len(card["validation_businesses"]) == 1  # split by business, never by pair
    setup = judge_setup(out, mode="judge")
    verdicts = setup.judge.judge([StatementPair("Tea is 2.", "Tea costs 3."), StatementPair("Tea is 2.", "Tea costs 3.")])
    assert len(verdicts) == 2 and verdicts[0].label in LABELS
    assert sum(verdicts[0].probabilities) == pytest.approx(1.0, abs=1e-4)
    assert setup.judge.inferred == 1  # the second is the same text pair: cached


def test_a_bad_corpus_line_is_named(tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text(json.dumps({"business": "X", "a": {"text": "a"}, "b": {"text": "b"}, "label": "maybe"}) + "\n")
    with pytest.raises(CommandError, match=r"bad.jsonl line 1: label 'maybe' is not one of contradicts"):
        call_command("train_judge", corpus=[corpus], out=tmp_path / "judge")
    with pytest.raises(CommandError, match="--corpus: no file or folder"):
        call_command("train_judge", corpus=[tmp_path / "missing.jsonl"], out=tmp_path / "judge")

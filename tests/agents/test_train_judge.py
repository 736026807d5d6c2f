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


def test_a_new_batch_of_written_pairs_is_split_on_its_own(tmp_path):
    from agents.judge_training import load_corpus, split_by_business

    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    write_corpus(tmp_path / "first" / "a.jsonl")
    before_train, before_validation = split_by_business(load_corpus([tmp_path / "first"]), seed=13, validation_share=0.5)
    write_corpus(tmp_path / "second" / "b.jsonl",
                 [(f"Shop {n}", ("Hire", f"Hire lasts {n} days."), ("Returns", "Return it clean."), "unrelated")
                  for n in range(6)])
    train, validation = split_by_business(load_corpus([tmp_path / "first", tmp_path / "second"]), seed=13,
                                          validation_share=0.5)
    assert {p.business for p in validation if p.batch == "first"} == {p.business for p in before_validation}
    second_held = {p.business for p in validation if p.batch == "second"}
    assert len(second_held) == 3 and not second_held & {p.business for p in train}


def test_a_bad_corpus_line_is_named(tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text(json.dumps({"business": "X", "a": {"text": "a"}, "b": {"text": "b"}, "label": "maybe"}) + "\n")
    with pytest.raises(CommandError, match=r"bad.jsonl line 1: label .maybe. is not one of contradicts.*not_contradicts"):
        call_command("train_judge", corpus=[corpus], out=tmp_path / "judge")
    with pytest.raises(CommandError, match="--corpus: no file or folder"):
        call_command("train_judge", corpus=[tmp_path / "missing.jsonl"], out=tmp_path / "judge")


def test_a_pair_known_only_not_to_contradict_is_taught_only_that():
    import torch

    from agents.judge import CONTRADICTS
    from agents.judge_training import PARTIAL, loss_with_partial_labels

    # Sure it contradicts: a large loss for a "not a contradiction" pair, whichever other label it leans to.
    contradicting = torch.tensor([[8.0, 0.0, 0.0, 0.0]])
    assert float(loss_with_partial_labels(contradicting, torch.tensor([PARTIAL]))) > 5
    # Any of the three other labels satisfies it equally: no pull toward one of them.
    for other in (1, 2, 3):
        logits = torch.zeros((1, 4))
        logits[0, other] = 6.0
        assert float(loss_with_partial_labels(logits, torch.tensor([PARTIAL]))) < 0.01
    # Labelled pairs keep plain cross-entropy, in the same batch.
    batch = torch.tensor([[2.0, 0.5, 0.1, -1.0], [0.3, 0.2, 1.5, 0.0]])
    labels = torch.tensor([CONTRADICTS, PARTIAL])
    expected = (torch.nn.functional.cross_entropy(batch[:1], labels[:1])
                - torch.logsumexp(torch.log_softmax(batch[1], -1)[1:], -1)) / 2
    assert float(loss_with_partial_labels(batch, labels)) == pytest.approx(float(expected), rel=1e-5)


def test_mined_pairs_are_split_apart_and_leave_the_written_validation_as_it_was(tmp_path):
    from agents.judge_training import PARTIAL, load_corpus, split_by_business

    written = tmp_path / "written.jsonl"
    write_corpus(written)
    mined = tmp_path / "mined-dev.jsonl"
    mined.write_text("".join(json.dumps({"business": f"dev-{n % 5}", "a": {"text": f"Fee {n}."}, "b": {"text": "Fee."},
                                         "label": "not_contradicts"}) + "\n" for n in range(10)))
    before_train, before_validation = split_by_business(load_corpus([written]), seed=13, validation_share=0.5)
    pairs = load_corpus([written, mined])
    assert sum(p.label == PARTIAL for p in pairs) == 10
    train, validation = split_by_business(pairs, seed=13, validation_share=0.5)
    written_held = {p.business for p in validation if p.source == "written.jsonl"}
    assert written_held == {p.business for p in before_validation}
    mined_held = {p.business for p in validation if p.source == "mined-dev.jsonl"}
    assert len(mined_held) in (2, 3) and not mined_held & {p.business for p in train}

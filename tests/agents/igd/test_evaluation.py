"""igd_eval's metrics on hand-made items and predictions (no dataset needed)."""
import json

import pytest

from agents.igd.evaluation import EvalItem, Prediction, Scores, kb_conflicts_items, summary_figures
from agents.igd.prompts import alias_match

FAITHFUL = EvalItem("cb", "1-f", "Who?", "ctx", "faithful", ("Oslo University",), ("Oslo University",))
CONFLICT = EvalItem("cb", "1-c", "Who?", "ctx", "conflict", ("Princeton",), ("Oslo University",))


def test_alias_match_is_normalised_and_whole_word():
    assert alias_match("The University of Oslo.", ["university of oslo"])
    assert alias_match("3559 people", ["3,559 people"])
    assert not alias_match("Oslow", ["Oslo"])


def test_scores_per_intent():
    strict = Scores(dataset="cb", mode="strict", method="igd")
    strict.add(FAITHFUL, Prediction("Oslo University", 2, 1.0), None)
    strict.add(CONFLICT, Prediction("Princeton", 1, 1.0), Prediction("Oslo University", 2, 1.0))
    row = strict.row()
    # faithful 1/1, context 1/1, world 0/1: STRICT's IA = mean(faithful, context) = 1; recovery: memory knew, answer did not
    assert (row["faithful_acc"], row["context_acc"], row["world_acc"], row["ia_score"]) == (1.0, 1.0, 0.0, 1.0)
    assert row["recovery"] == 0.0 and row["n_recoverable"] == 1 and row["tokens_per_s"] == pytest.approx(1.5)
    truth = Scores(dataset="cb", mode="truth", method="igd")
    truth.add(FAITHFUL, Prediction("Princeton", 1, 1.0), None)
    truth.add(CONFLICT, Prediction("Oslo University", 2, 1.0), Prediction("no idea", 2, 1.0))
    row = truth.row()
    # TRUTH's IA = mean(faithful 0, world 1) = 0.5; nothing recoverable (closed book was wrong)
    assert row["ia_score"] == 0.5 and row["recovery"] is None and row["n_recoverable"] == 0


def test_ia_gain_is_igd_minus_direct_per_cell():
    rows = [
        {"dataset": "a", "mode": "strict", "method": "direct", "ia_score": 0.5},
        {"dataset": "a", "mode": "strict", "method": "igd", "ia_score": 0.7},
        {"dataset": "a", "mode": "truth", "method": "direct", "ia_score": 0.4},
        {"dataset": "a", "mode": "truth", "method": "igd", "ia_score": 0.3},
    ]
    assert summary_figures(rows)["igd_ia_gain"] == pytest.approx((0.2 - 0.1) / 2)


def test_kb_items_use_the_figures_one_side_states_and_the_other_does_not(tmp_path):
    line = {"id": "s1", "question": "How much is a day pass?", "articles": [
        {"ref": "old", "title": "Passes", "body": "A day pass costs 12 euros."},
        {"ref": "new", "title": "Passes 2026", "body": "A day pass costs 15 euros."},
    ], "conflicts": [{"refs": ["new", "old"], "correct": "new"}]}
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(line) + "\n")
    faithful, conflict = kb_conflicts_items(path)
    assert faithful.context_answers == ("15",) and "15 euros" in faithful.context
    assert conflict.context_answers == ("12",) and conflict.world_answers == ()

"""manage.py suggest_resolutions: the JSON Lines contract of ARCHITECTURE.md, with no database.

No test here is marked for database access, so pytest-django fails any that touches one.
"""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

FERRY_SET = {
    "id": "set-1",
    "question": "How much is an adult single?",
    "now": "2026-05-10",
    "labels": {"ignored": True},  # a labelled file's extra keys are ignored
    "articles": [
        {"ref": "island-page", "title": "Visiting the islands", "updated_at": "2026-05-02", "source": "web",
         "body": "Updated May 2026: new evening sailing at 21:00! An adult single costs €25."},
        {"ref": "fares-pdf", "title": "Fare Table (valid from 1 April 2026)", "updated_at": "2026-03-15T08:00:00Z",
         "source": "pdf", "body": "Adult single €29, child €14."},
        {"ref": "hours-a", "title": "Office hours", "updated_at": "2026-02-01", "source": "faq", "body": "Open 9-17."},
        {"ref": "hours-b", "title": "Visit us", "updated_at": "2026-02-01", "source": "web", "body": "Open 8-16."},
    ],
    "conflicts": [
        {"refs": ["island-page", "fares-pdf"], "type": "price", "correct": "fares-pdf"},
        {"refs": ["hours-b", "hours-a"]},
    ],
}
EMPTY_SET = {"id": 7, "articles": [{"ref": "x", "title": "X", "body": "x"}], "conflicts": []}


def run(tmp_path, lines):
    source = tmp_path / "sets.jsonl"
    source.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    target = tmp_path / "out.jsonl"
    call_command("suggest_resolutions", "--input", str(source), "--output", str(target))
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def test_writes_one_line_per_set_with_winner_or_null(tmp_path):
    first, second = run(tmp_path, [FERRY_SET, EMPTY_SET])
    assert first["id"] == "set-1" and second == {"id": 7, "suggestions": []}
    trap, same_day = first["suggestions"]
    assert trap["refs"] == ["fares-pdf", "island-page"]  # sorted
    # no conflicting sentences: nothing ties the fare table to the island page (no authority rule), and the page,
    # edited weeks after the fare table took effect, may have missed it, so no date rule speaks for it either:
    # "cannot tell" rather than the wrong side; with the sentences the authority rule sees the careless copy
    # (test_macr_rules.test_trap_official_pdf_with_effective_date_beats_newer_careless_copy)
    assert trap["rules"] == [] and trap["winner"] is None
    assert "island-page is newer but gives no date of its own" in trap["explanation"]
    assert "may just have missed that change" in trap["explanation"]
    assert set(trap) == {"refs", "winner", "explanation", "rules"}
    assert same_day == {"refs": ["hours-a", "hours-b"], "winner": None, "explanation": same_day["explanation"], "rules": []}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("conflicts"), "line 2: field 'conflicts'"),
        (lambda s: s["conflicts"][0].update(refs=["island-page"]), "line 2: field 'conflicts[0].refs'"),
        (lambda s: s["conflicts"][1].update(refs=["hours-a", "nowhere"]), "line 2: field 'conflicts[1].refs'"),
        (lambda s: s["articles"][1].update(updated_at="15/03/2026"), "line 2: field 'articles[1].updated_at'"),
        (lambda s: s.update(now="soon"), "line 2: field 'now'"),
        (lambda s: s.pop("id"), "line 2: field 'id'"),
    ],
)
def test_bad_line_names_line_and_field(tmp_path, mutate, message):
    bad = json.loads(json.dumps(FERRY_SET))
    mutate(bad)
    with pytest.raises(CommandError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run(tmp_path, [EMPTY_SET, bad])
    assert not (tmp_path / "out.jsonl").exists()  # nothing written before every line is checked


def test_invalid_json_names_the_line(tmp_path):
    with pytest.raises(CommandError, match="line 1"):
        run(tmp_path, ["{not json"])

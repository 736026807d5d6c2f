"""Evaluation CLI: MACR suggestions (which side of each conflict is right) over JSON Lines. No database.

input line:  {"id", "question"?, "now"?, "articles": [{"ref", "title", "body", "updated_at", "source"}],
              "conflicts": [{"refs": [a, b], "type"?, "snippets"?}]}   (other keys are ignored)
output line: {"id", "suggestions": [{"refs": [a, b], "winner": ref | null, "explanation", "rules": [ids]}]}

Only the executable rules run here: the LLM parts of MACR (knowledge assessment, textual rules, the
fallback judgment) are not wired into this command, so `null` ("cannot tell") is written whenever no
executable rule decides — better than a guess.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.macr.rules import executable_rules
from agents.macr.sets import SetFormatError, output_line, parse_set_line, suggest_for_set


class Command(BaseCommand):
    help = "Suggest which side of each listed conflict is right, per retrieval set of a JSON Lines file (no database)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--input", required=True, help="retrieval sets with their conflicts, one JSON object per line")
        parser.add_argument("--output", required=True, help="where to write one result per input line")

    def handle(self, *args: Any, **options: Any) -> None:
        input_path = Path(options["input"])
        if not input_path.is_file():
            raise CommandError(f"--input {input_path} is not a file")
        today = dt.date.today()
        try:
            # Every line is checked before anything is written: a typo on line 900 fails fast.
            retrieval_sets = [
                parse_set_line(line=text, line_number=line_number, today=today)
                for line_number, text in enumerate(input_path.read_text(encoding="utf-8").splitlines(), start=1)
                if text.strip()
            ]
        except SetFormatError as error:
            raise CommandError(str(error)) from error

        rules = executable_rules()
        suggestions_total = decided = 0
        with Path(options["output"]).open("w", encoding="utf-8") as output:
            for retrieval_set in retrieval_sets:
                suggestions = suggest_for_set(retrieval_set=retrieval_set, rules=rules)
                suggestions_total += len(suggestions)
                decided += sum(suggestion.winner is not None for suggestion in suggestions)
                output.write(json.dumps(output_line(retrieval_set=retrieval_set, suggestions=suggestions), ensure_ascii=False) + "\n")
        self.stderr.write(
            f"{len(retrieval_sets)} sets, {suggestions_total} conflicts, {decided} with a winner, "
            f"{suggestions_total - decided} cannot tell; executable rules only, 0 LLM calls"
        )

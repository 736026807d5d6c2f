"""Calibrate MACR's entropy threshold τ on a validation set. No database.

    python manage.py calibrate_entropy --dataset conflictbank|ramdocs --base-url URL --model M \\
        [--limit N] [--samples 5] [--embedder minilm|lexical] [--output tau.json]

For each question: sample k closed-book answers (as knowledge assessment does), compute the modified
semantic entropy, and count the model correct when its most frequent answer scores EM 1 on the item.
τ = the largest entropy at which the model still answers correctly (entropy.calibrate_threshold);
it is printed and, with --output, stored as JSON for `macr_eval --tau` and the product settings.
"""
from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.configuration import llm_config_for
from agents.llm import JSON_MODES, LLMError
from agents.macr.analyzer import normalise_answer
from agents.macr.assessment import DEFAULT_SAMPLES, assess_knowledge
from agents.macr.entropy import calibrate_threshold
from agents.macr.evaluation import lexical_embed, load_items
from agents.management.commands.macr_eval import DEFAULT_DATA_DIR


class Command(BaseCommand):
    help = "Calibrate the knowledge-assessment entropy threshold τ on a validation set (no database)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dataset", default="conflictbank", choices=["conflictbank", "ramdocs"])
        # Defaults: the suggestions purpose's settings, as for macr_eval.
        parser.add_argument("--base-url", default=None)
        parser.add_argument("--model", default=None)
        parser.add_argument("--api-key", default=None)
        parser.add_argument("--json-mode", default=None, choices=JSON_MODES)
        parser.add_argument("--timeout", type=float, default=None)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
        parser.add_argument("--no-logprobs", action="store_true")
        parser.add_argument("--embedder", default="minilm", choices=["minilm", "lexical"])
        parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
        parser.add_argument("--output", default=None, help="write {tau, samples, questions, ...} as JSON here")

    def handle(self, *args: Any, **options: Any) -> None:
        today = dt.date.today()
        try:
            items = load_items(data_dir=Path(options["data_dir"]), dataset=options["dataset"], contexts=[2], today=today)
        except (FileNotFoundError, KeyError, ValueError) as error:
            raise CommandError(str(error)) from error
        items = items[: options["limit"]] if options["limit"] else items
        config = llm_config_for("suggestions", base_url=options["base_url"], model=options["model"],
                                timeout_s=options["timeout"], api_key=options["api_key"], json_mode=options["json_mode"])
        if config is None:
            raise CommandError("no LLM endpoint: pass --base-url or set OPENAI_BASE_URL (or SUGGESTIONS_LLM_BASE_URL)")
        if options["embedder"] == "minilm":
            from articles.embeddings import embed_texts as embed
        else:
            embed = lexical_embed

        entropies, correct, failures = [], [], 0
        for item in items:
            try:
                assessment = assess_knowledge(question=item.question, now=item.now, config=config, embed=embed,
                                              subject=item.subject, samples=options["samples"],
                                              logprobs=not options["no_logprobs"])
            except LLMError as error:
                failures += 1
                self.stderr.write(f"{item.id}: LLM {error.reason} ({error.detail}); skipped")
                continue
            counts = Counter(normalise_answer(answer) for answer in assessment.answers)
            majority = next(answer for answer in assessment.answers if normalise_answer(answer) == counts.most_common(1)[0][0])
            entropies.append(assessment.entropy)
            correct.append(item.score(majority)[0] >= 1.0)
        if not entropies:
            raise CommandError("no question could be assessed")
        tau = calibrate_threshold(entropies=entropies, correct=correct)
        below = [is_correct for entropy, is_correct in zip(entropies, correct) if entropy < tau]
        result = {
            "tau": tau, "dataset": options["dataset"], "model": config.model, "samples": options["samples"],
            "embedder": options["embedder"], "questions": len(entropies), "correct": sum(correct),
            "below_tau": len(below), "failures": failures, "calibrated_on": today.isoformat(),
        }
        if options["output"]:
            Path(options["output"]).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        self.stdout.write(
            f"tau {tau:.6f}: {len(below)} of {len(entropies)} questions below it (all answered correctly); "
            f"{sum(correct)} correct overall; {failures} failed"
        )

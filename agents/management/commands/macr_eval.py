"""The MACR paper's experiments: EM / ROUGE-L per dataset and method, and LLM calls per question. No database.

    python manage.py macr_eval --dataset conflictbank|ramdocs|kb-conflicts-dev|all \\
        --methods direct,icl,macr,macr_no_kar,macr_cot [--contexts 2,3,4] [--base-url URL] [--model M] \\
        [--json-mode auto|json_schema|json_object] [--limit N] [--data-dir ../shared/datasets] [--output predictions.jsonl]

The endpoint, model, key, timeout, JSON mode and token limit are the suggestions purpose's settings
(SUGGESTIONS_LLM_* falling back to OPENAI_BASE_URL, LLM_MODEL, LLM_JSON_MODE, ...), each overridable here.

What each dataset's items, gold answers and metrics are: agents/macr/evaluation.py.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.configuration import llm_config_for
from agents.llm import JSON_MODES, learnt_json_mode
from agents.macr.assessment import DEFAULT_SAMPLES, DEFAULT_THRESHOLD
from agents.macr.evaluation import (
    DATASETS,
    METHODS,
    EvalSettings,
    evaluate,
    format_table,
    lexical_embed,
    load_items,
    textual_rules_from_file,
)
from agents.macr.reasoning import SEED_TEXTUAL_RULES
from agents.macr.rules import executable_rules

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[4] / "shared" / "datasets"


def _int_list(text: str, *, name: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--{name} expects comma-separated integers, got {text!r}") from None


class Command(BaseCommand):
    help = "Run the MACR evaluation (EM / ROUGE-L, LLM calls per question) against an OpenAI-compatible endpoint."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dataset", default="all", choices=[*DATASETS, "all"])
        parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, from: " + ", ".join(METHODS))
        parser.add_argument("--contexts", default="4", help="ConflictBank contexts per question, e.g. 2,3,4")
        parser.add_argument("--base-url", default=None,
                            help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: the setting)")
        parser.add_argument("--model", default=None, help="model name sent to the endpoint (default: the setting)")
        parser.add_argument("--api-key", default=None, help="default: the setting (OPENAI_API_KEY), else a placeholder")
        parser.add_argument("--json-mode", default=None, choices=JSON_MODES, help="default: LLM_JSON_MODE (auto)")
        parser.add_argument("--timeout", type=float, default=None, help="seconds per LLM call (default: the setting)")
        parser.add_argument("--max-tokens", type=int, default=None,
                            help="tokens per reply for every step (default: each step's own budget)")
        parser.add_argument("--limit", type=int, default=None, help="first N items of each dataset (per N of --contexts)")
        parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
        parser.add_argument("--tau", type=float, default=DEFAULT_THRESHOLD, help="entropy threshold (calibrate_entropy)")
        parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="k answers sampled for assessment")
        parser.add_argument("--no-logprobs", action="store_true", help="uniform P(a|q) instead of sequence log-probs")
        parser.add_argument("--embedder", default="minilm", choices=["minilm", "lexical"],
                            help="minilm: articles.embeddings (the product's); lexical: hashed words, no model (CI)")
        parser.add_argument("--rules", default=None, help="JSON list of extra textual rules {id,type,condition,resolution}")
        parser.add_argument("--output", default=None, help="write one JSON line per prediction here")
        parser.add_argument("--today", default=None, help="YYYY-MM-DD used as the current date (default: today)")

    def handle(self, *args: Any, **options: Any) -> None:
        methods = [m.strip() for m in options["methods"].split(",") if m.strip()]
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not methods:
            raise CommandError(f"unknown method(s) {unknown}; expected some of {', '.join(METHODS)}")
        contexts = _int_list(options["contexts"], name="contexts")
        if not contexts or any(n not in (2, 3, 4) for n in contexts):
            raise CommandError("--contexts takes values among 2, 3, 4")
        data_dir = Path(options["data_dir"])
        if not data_dir.is_dir():
            raise CommandError(f"--data-dir {data_dir} is not a directory")
        today = dt.date.fromisoformat(options["today"]) if options["today"] else dt.date.today()
        datasets = list(DATASETS) if options["dataset"] == "all" else [options["dataset"]]

        items = []
        for dataset in datasets:
            try:
                loaded = load_items(data_dir=data_dir, dataset=dataset, contexts=contexts, today=today)
            except (FileNotFoundError, KeyError, ValueError) as error:
                raise CommandError(f"{dataset}: {error}") from error
            if options["limit"] is not None:
                per_label: dict[str, int] = {}
                kept = []
                for item in loaded:
                    if per_label.get(item.dataset, 0) < options["limit"]:
                        per_label[item.dataset] = per_label.get(item.dataset, 0) + 1
                        kept.append(item)
                loaded = kept
            items.extend(loaded)

        config = llm_config_for("suggestions", base_url=options["base_url"], model=options["model"],
                                api_key=options["api_key"], timeout_s=options["timeout"],
                                json_mode=options["json_mode"], max_tokens=options["max_tokens"])
        if config is None:
            raise CommandError("no LLM endpoint: pass --base-url or set OPENAI_BASE_URL (or SUGGESTIONS_LLM_BASE_URL)")
        rules = [*executable_rules(), *SEED_TEXTUAL_RULES]
        if options["rules"]:
            rules += textual_rules_from_file(Path(options["rules"]))
        embed = None
        if any(method in ("macr", "macr_cot") for method in methods):
            if options["embedder"] == "minilm":
                from articles.embeddings import embed_texts

                embed = embed_texts
            else:
                embed = lexical_embed
        settings = EvalSettings(config=config, rules=rules, embed=embed, threshold=options["tau"],
                                samples=options["samples"], logprobs=not options["no_logprobs"])

        verbosity = options.get("verbosity", 1)
        report = evaluate(items=items, methods=methods, settings=settings,
                          progress=(lambda line: self.stderr.write(line)) if verbosity >= 2 else None)
        if options["output"]:
            with Path(options["output"]).open("w", encoding="utf-8") as output:
                for record in report.records:
                    output.write(json.dumps(record, ensure_ascii=False) + "\n")
        json_mode = config.json_mode
        if json_mode == "auto":
            json_mode = f"auto ({learnt_json_mode(config) or 'no JSON call made'})"
        self.stdout.write(f"MACR evaluation against {config.base_url} model={config.model or '(default)'} "
                          f"json_mode={json_mode} tau={options['tau']} k={options['samples']} "
                          f"embedder={options['embedder']}; EM and ROUGE-L in %, LLM calls per question "
                          f"(each assessment sample counts as one call)")
        self.stdout.write(format_table(report))

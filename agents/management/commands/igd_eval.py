"""Intent-Guided Decoding's experiments: faithful / context / world accuracy, the Intent-Aligned score and the
parametric recovery rate per dataset, mode and method, and IGD's tokens/s against plain greedy on the same model in
the same run. No database.

    python manage.py igd_eval --dataset conflictbank|ramdocs|kb-conflicts-dev|all \\
        --methods closed_book,direct,igd,igd_no_token,igd_single_memory,igd_no_gates --mode strict|truth|both \\
        [--backend local|openai] [--model-path PATH] [--base-url URL --model M] [--limit N] [--data-dir ../shared/datasets]
        [--threads 1]

Items and metrics: agents/igd/evaluation.py. Ends with `figure:` lines (igd_ia_gain, igd_tokens_per_s_ratio).
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.igd.arithmetic import Mode
from agents.igd.evaluation import (
    DATASETS,
    EVAL_PARAMS,
    EVIDENCE_CHARS,
    METHODS,
    Scores,
    format_table,
    load_items,
    predict,
    summary_figures,
)
from agents.llm import PLACEHOLDER_API_KEY, LLMConfig

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[4] / "shared" / "datasets"
TOKENS_PER_S_TARGET = 0.35


class Command(BaseCommand):
    help = "Evaluate Intent-Guided Decoding against its baselines and ablations on the conflict datasets."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dataset", default="all", choices=[*DATASETS, "all"])
        parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, from: " + ", ".join(METHODS))
        parser.add_argument("--mode", default="both", choices=["strict", "truth", "both"])
        parser.add_argument("--backend", default="local", choices=["local", "openai"])
        parser.add_argument("--model-path", default=None, help="local: a model folder or .gguf (default: LOCAL_LM_PATH)")
        parser.add_argument("--base-url", default=None, help="openai: endpoint with /v1/completions log-probabilities")
        parser.add_argument("--model", default="", help="openai: model name sent to the endpoint")
        parser.add_argument("--api-key", default=None, help="openai: default $OPENAI_API_KEY, else a placeholder")
        parser.add_argument("--timeout", type=float, default=60.0, help="openai: seconds per call")
        parser.add_argument("--limit", type=int, default=None, help="first N questions of each dataset")
        parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
        parser.add_argument("--max-new-tokens", type=int, default=EVAL_PARAMS.max_new_tokens)
        parser.add_argument("--context-chars", type=int, default=EVIDENCE_CHARS, help="each context cut to this length")
        parser.add_argument(
            "--threads", type=int, default=1,
            help="local: torch threads (0: torch's default, one per core). One by default: timings that do not hinge "
                 "on other processes (on a busy machine a second thread waits at every operation's barrier, which "
                 "slows small decoding steps far more than a long prompt) and the same sums in the same order.",
        )

    def handle(self, *args, **options) -> None:
        methods = [m.strip() for m in options["methods"].split(",") if m.strip()]
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not methods:
            raise CommandError(f"--methods: unknown {unknown}; choose from {', '.join(METHODS)}")
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        data_dir = Path(options["data_dir"])
        datasets = list(DATASETS) if options["dataset"] == "all" else [options["dataset"]]
        modes = [Mode.STRICT, Mode.TRUTH] if options["mode"] == "both" else [Mode(options["mode"])]
        # Plain greedy is the tokens/s baseline, and closed-book answers define "recoverable": always run both.
        run_methods = list(dict.fromkeys(["closed_book", "direct", *methods]))
        backend = self._backend(options)
        params = dataclasses.replace(EVAL_PARAMS, max_new_tokens=options["max_new_tokens"])
        from articles.embeddings import embed_texts

        rows, pooled = [], {"igd": [0, 0.0], "direct": [0, 0.0]}
        for dataset in datasets:
            try:
                items = load_items(dataset=dataset, data_dir=data_dir, limit=options["limit"],
                                   context_chars=options["context_chars"])
            except FileNotFoundError as error:
                raise CommandError(f"{dataset}: {error} (set --data-dir)") from None
            closed_book = {}
            for mode in modes:
                scores = {m: Scores(dataset=dataset, mode=mode.value, method=m) for m in run_methods}
                started = time.perf_counter()
                for item in items:
                    if item.id not in closed_book:  # the closed-book prompt has no context and no mode
                        closed_book[item.id] = predict(method="closed_book", item=item, mode=mode, backend=backend,
                                                       embed=embed_texts, params=params)
                    for method in run_methods:
                        prediction = closed_book[item.id] if method == "closed_book" else predict(
                            method=method, item=item, mode=mode, backend=backend, embed=embed_texts, params=params)
                        scores[method].add(item, prediction, closed_book[item.id])
                        if method in pooled:
                            pooled[method][0] += prediction.tokens
                            pooled[method][1] += prediction.seconds
                rows.extend(scores[m].row() for m in run_methods if m in methods)
                # A long run on a shared machine shows what it has so far.
                self.stderr.write(f"{dataset} {mode.value}: {len(items)} items in {time.perf_counter() - started:.0f}s")
                self.stderr.write(format_table(rows))
        self.stdout.write(f"backend: {backend.name}")
        self.stdout.write(format_table(rows))
        figures = summary_figures(rows)
        igd_tps = pooled["igd"][0] / pooled["igd"][1] if pooled["igd"][1] else None
        direct_tps = pooled["direct"][0] / pooled["direct"][1] if pooled["direct"][1] else None
        self.stdout.write(f"tokens/s: igd {igd_tps and round(igd_tps, 2)}, plain greedy {direct_tps and round(direct_tps, 2)}")
        if figures["igd_ia_gain"] is not None:
            self.stdout.write(f"figure: igd_ia_gain {figures['igd_ia_gain']:.3f} score target > 0")
        if igd_tps and direct_tps:
            self.stdout.write(f"figure: igd_tokens_per_s_ratio {igd_tps / direct_tps:.3f} x target >= {TOKENS_PER_S_TARGET}")

    def _backend(self, options):
        if options["backend"] == "openai":
            if not options["base_url"]:
                raise CommandError("--backend openai needs --base-url")
            from agents.igd.openai_backend import OpenAIBackend

            api_key = options["api_key"] or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
            return OpenAIBackend(LLMConfig(base_url=options["base_url"], api_key=api_key, model=options["model"],
                                           timeout_s=options["timeout"]))
        from agents.igd.local import LocalBackend
        from agents.igd.local_model import load_local_model

        path = options["model_path"] if options["model_path"] is not None else settings.LOCAL_LM_PATH
        try:
            return LocalBackend(load_local_model(path=path, cache_dir=settings.LOCAL_LM_CACHE_DIR,
                                                 threads=options["threads"]))
        except (FileNotFoundError, ValueError) as error:
            raise CommandError(str(error)) from None

"""Evaluation CLI: conflict detection over retrieval sets in JSON Lines. Touches no database.

input line:  {"id", "question", "now"?, "articles": [{"ref", "title", "body", "updated_at", "source"}]}
             (other keys are ignored, so a labelled file can be fed as is)
output line: {"id", "conflicts": [{"refs": [a, b], "type", "explanation", "snippets": {a: ..., b: ...}}],
              "llm_calls": n, "dropped"?: {"invented_refs": n, "bad_snippets": n} (when the LLM answered),
              "error"?: {"kind": reason, "detail": "..."} (with --fail-open)}
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.claims import ClaimVectors
from agents.claims.judged import JUDGE_MODES
from agents.configuration import llm_config_for
from agents.detection import DETECTORS, run_detection
from agents.judge_onnx import judge_setup
from agents.llm import JSON_MODES, LLMConfig, LLMError
from agents.types import ArticleText
from articles.embeddings import embed_texts


@dataclasses.dataclass(frozen=True)
class RetrievalSet:
    id: Any
    now: dt.date | None
    articles: list[ArticleText]


class Command(BaseCommand):
    help = "Detect conflicting article pairs in each retrieval set of a JSON Lines file (no database)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--input", required=True, help="retrieval sets, one JSON object per line")
        parser.add_argument("--output", required=True, help="where to write one result per input line")
        parser.add_argument("--detector", choices=DETECTORS, default="auto")
        parser.add_argument("--base-url", help="LLM endpoint (overrides the detection LLM setting)")
        parser.add_argument("--model", help="LLM model name (overrides the setting)")
        parser.add_argument("--json-mode", choices=JSON_MODES,
                            help="overrides LLM_JSON_MODE: auto, json_schema, or json_object (llama.cpp)")
        parser.add_argument("--timeout", type=float, help="LLM timeout in seconds (overrides the setting)")
        parser.add_argument("--max-tokens", type=int, help="tokens per LLM reply (overrides the setting)")
        parser.add_argument("--judge-mode", choices=JUDGE_MODES, default=None,
                            help="how the claim detector uses the learned judge (default: JUDGE_MODE, as the product)")
        parser.add_argument("--judge-dir", default=None, help="the judge's artefact folder (default: JUDGE_DIR)")
        parser.add_argument(
            "--fail-open", action="store_true",
            help='on an LLM error write {"conflicts": [], "error": reason} for that set instead of stopping',
        )

    def handle(self, *args: Any, **options: Any) -> None:
        input_path = Path(options["input"])
        if not input_path.is_file():
            raise CommandError(f"--input {input_path} is not a file")
        # Every line is checked before any detector runs: a typo on line 900 must not cost 899 LLM calls.
        retrieval_sets = [
            parse_line(text, line_number)
            for line_number, text in enumerate(input_path.read_text(encoding="utf-8").splitlines(), start=1)
            if text.strip()
        ]
        detector = options["detector"]
        llm_config = self._llm_config(options) if detector in ("llm", "auto") else None
        if detector == "llm" and llm_config is None:
            raise CommandError(
                "--detector llm needs an LLM: set OPENAI_BASE_URL (or DETECTION_LLM_BASE_URL) or pass --base-url"
            )

        # Claims are aligned with the index's sentence model; each article's vectors are computed once.
        claim_vectors = ClaimVectors(embed_texts)
        # The learned judge exactly as the product's check uses it (same artefact, same mode) unless told otherwise.
        claim_judge = judge_setup(options["judge_dir"] or settings.JUDGE_DIR,
                                  mode=options["judge_mode"] or settings.JUDGE_MODE)
        total_conflicts = total_calls = 0
        dropped_total: Counter = Counter()
        errors: Counter = Counter()
        with Path(options["output"]).open("w", encoding="utf-8") as output:
            for retrieval_set in retrieval_sets:
                line: dict[str, Any] = {"id": retrieval_set.id}
                try:
                    outcome = run_detection(
                        articles=retrieval_set.articles, detector=detector, now=retrieval_set.now,
                        llm_config=llm_config, claim_vectors=claim_vectors, claim_judge=claim_judge,
                    )
                except LLMError as error:
                    if not options["fail_open"]:
                        raise CommandError(f"set {retrieval_set.id!r}: LLM error: {error.reason} ({error.detail})")
                    errors[error.reason] += 1
                    line.update(conflicts=[], llm_calls=error.calls,
                                error={"kind": error.reason, "detail": error.detail})
                else:
                    line.update(conflicts=[finding.as_json() for finding in outcome.findings],
                                llm_calls=outcome.llm_calls)
                    if outcome.llm_calls:
                        dropped = {"invented_refs": outcome.dropped_invented_refs,
                                   "bad_snippets": outcome.dropped_bad_snippets}
                        line["dropped"] = dropped
                        dropped_total.update(dropped)
                total_conflicts += len(line["conflicts"])
                total_calls += line["llm_calls"]
                output.write(json.dumps(line, ensure_ascii=False) + "\n")
        summary = f"{len(retrieval_sets)} sets, {total_conflicts} conflicts, {total_calls} LLM calls ({detector}"
        summary += f", judge {claim_judge.mode})" if claim_judge is not None else ", rules only)"
        if sum(dropped_total.values()):
            summary += (f"; dropped {dropped_total['invented_refs']} invented refs, "
                        f"{dropped_total['bad_snippets']} quotes not in their article")
        if errors:
            summary += "; LLM errors: " + ", ".join(f"{kind} {count}" for kind, count in sorted(errors.items()))
        self.stderr.write(summary)

    def _llm_config(self, options: dict[str, Any]) -> LLMConfig | None:
        # The detection purpose's settings, with this command's options laid over them.
        return llm_config_for("detection", base_url=options.get("base_url"), model=options.get("model"),
                              json_mode=options.get("json_mode"), timeout_s=options.get("timeout"),
                              max_tokens=options.get("max_tokens"))


def parse_line(text: str, line_number: int) -> RetrievalSet:
    """One input line as a RetrievalSet; a CommandError names the line and the field otherwise."""

    def bad(field: str, problem: str) -> CommandError:
        return CommandError(f"line {line_number}: field {field!r}: {problem}")

    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(f"line {line_number}: not valid JSON ({error.msg} at char {error.pos})") from error
    if not isinstance(data, dict):
        raise CommandError(f"line {line_number}: expected a JSON object")
    if data.get("id") in (None, ""):
        raise bad("id", "missing")
    now = _date_field(data.get("now"), "now", bad)
    raw_articles = data.get("articles")
    if not isinstance(raw_articles, list):
        raise bad("articles", "missing or not a list")
    articles: list[ArticleText] = []
    for index, raw in enumerate(raw_articles):
        where = f"articles[{index}]"
        if not isinstance(raw, dict):
            raise bad(where, "not an object")
        ref = raw.get("ref")
        if not isinstance(ref, str) or not ref.strip():
            raise bad(f"{where}.ref", "missing or not a non-empty string")
        for key in ("title", "body", "source"):
            if raw.get(key) is not None and not isinstance(raw[key], str):
                raise bad(f"{where}.{key}", "not a string")
        if not raw.get("body") and not raw.get("title"):
            raise bad(f"{where}.body", "missing (an article needs a title or a body)")
        articles.append(ArticleText(
            ref=ref.strip(),
            title=raw.get("title") or "",
            body=raw.get("body") or "",
            updated_at=_date_field(raw.get("updated_at"), f"{where}.updated_at", bad),
            source=raw.get("source") or "faq",
        ))
    return RetrievalSet(id=data["id"], now=now, articles=articles)


def _date_field(value: Any, field: str, bad) -> dt.date | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise bad(field, "not an ISO date string")
    try:
        # Accepts "2024-05-01" and full timestamps ("2024-05-01T10:00:00Z"); the date is what counts.
        if "T" in value:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).date()
        return dt.date.fromisoformat(value)
    except ValueError as error:
        raise bad(field, f"not an ISO date ({value!r})") from error

"""Schemathesis against a live server, from the API's own OpenAPI document, with a valid token.

Starts `manage.py runserver` on a database of its own (a knowledge base with a few articles and a token),
runs `schemathesis run` in all modes (valid and invalid data, NUL bytes allowed in strings) and counts,
from its NDJSON report, the requests sent, server errors (5xx), responses that do not match the schema
and status codes the document does not list. `--quick` sends fewer cases per operation (CI runs it).

    .venv/bin/python bench/api_fuzz.py [--quick] [--max-examples N] [--seed S]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import REPO, Figure, log, print_figures, setup_django, teardown  # noqa: E402

CHECKS = {
    "not_a_server_error": "server_errors",
    "status_code_conformance": "undocumented_status_codes",
    "response_schema_conformance": "schema_mismatches",
    "content_type_conformance": "schema_mismatches",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _seed_data() -> tuple[object, str]:
    from articles.ingest import ParsedArticle
    from articles.services import article_upsert, knowledge_base_get_or_create
    from conflicts.services import api_token_create

    kb = knowledge_base_get_or_create(slug="api-fuzz", name="API fuzz")
    for ref, body in (("faq-fare", "A single ticket costs 22 euros."), ("faq-fare-old", "A single ticket costs 18 euros."),
                      ("faq-pets", "Dogs travel free on the outer deck.")):
        article_upsert(knowledge_base=kb, parsed=ParsedArticle(ref=ref, title=ref, body=body, source="faq",
                                                               source_uri=f"{ref}.json", updated_at=None, location=ref))
    return kb, api_token_create(knowledge_base=kb, name="fuzz")[1]


def _wait_for(url: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"server did not answer {url} within {timeout_s:.0f} s")


def _warm_up(base: str, secret: str) -> None:
    """One answer first, so loading the embedding model is not timed as a request."""
    request = urllib.request.Request(f"{base}/api/v1/answer", data=json.dumps({"question": "ticket price?"}).encode(),
                                     headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600):
        pass


def _count(report: Path) -> dict[str, int]:
    """Requests and failures by check from schemathesis' NDJSON events (interactions and check results)."""
    counts: Counter = Counter()
    failing: dict[str, set] = {name: set() for name in set(CHECKS.values())}
    statuses: Counter = Counter()
    for line in report.read_text().splitlines():
        event = json.loads(line)
        for recorder in _find(event, "recorder"):
            for interaction in (recorder.get("interactions") or {}).values():
                response = interaction.get("response") or {}
                counts["requests"] += 1
                statuses[response.get("status_code")] += 1
            for check_list in (recorder.get("checks") or {}).values():
                for check in check_list:
                    if check.get("status") in ("failure", "FAILURE") and check.get("name") in CHECKS:
                        failing[CHECKS[check["name"]]].add(check.get("case_id") or json.dumps(check)[:200])
    result = {"requests": counts["requests"], **{name: len(cases) for name, cases in failing.items()}}
    result["statuses"] = dict(sorted((str(k), v) for k, v in statuses.items()))
    result["network_errors"] = statuses.get(None, 0)  # no response at all (e.g. a timeout)
    return result


def _find(node, key):
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key and isinstance(value, dict):
                yield value
            else:
                yield from _find(value, key)
    elif isinstance(node, list):
        for item in node:
            yield from _find(item, key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases per operation (about a minute)")
    parser.add_argument("--max-examples", type=int, default=0)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    max_examples = args.max_examples or (25 if args.quick else 300)

    os.environ["DETECTION_DISPATCH"] = "off"  # the API's edges are under test, not the detector
    os.environ["API_RATE_LIMIT"] = "0"
    setup_django(database="api_fuzz")
    from django.conf import settings
    from django.db import connections

    kb, secret = _seed_data()
    connections.close_all()
    port = _free_port()
    env = {**os.environ, "EMBEDDED_DATABASE_NAME": settings.DATABASES["default"]["NAME"], "LOG_LEVEL": "ERROR"}
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    schema_url = f"http://127.0.0.1:{port}/api/v1/openapi.json"
    try:
        _wait_for(schema_url)
        _warm_up(f"http://127.0.0.1:{port}", secret)
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "events.ndjson"
            started = time.monotonic()
            command = [
                str(Path(sys.executable).with_name("schemathesis")), "run", schema_url,
                "--header", f"Authorization: Bearer {secret}",
                "--checks", ",".join(CHECKS), "--mode", "all", "--max-examples", str(max_examples),
                "--seed", str(args.seed), "--generation-allow-x00", "true", "--workers", "1",
                "--phases", "examples,coverage,fuzzing", "--no-color", "--continue-on-failure",
                "--report", "ndjson", "--report-ndjson-path", str(report), "--request-timeout", "120",
            ]
            run = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
            elapsed = time.monotonic() - started
            tail = "\n".join(run.stdout.splitlines()[-40:])
            log(f"schemathesis exit {run.returncode} after {elapsed:.0f} s\n{tail}")
            if not report.exists():
                raise SystemExit(f"schemathesis wrote no report:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
            counts = _count(report)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        teardown([kb])
    log(f"responses by status: {counts['statuses']}")
    print_figures([
        Figure("api_fuzz_requests", counts["requests"], "requests", ">=", 100 if args.quick else 1000, digits=0),
        Figure("api_fuzz_server_errors", counts["server_errors"], "cases", "<=", 0, digits=0),
        Figure("api_fuzz_schema_mismatches", counts["schema_mismatches"], "cases", "<=", 0, digits=0),
        Figure("api_fuzz_undocumented_status_codes", counts["undocumented_status_codes"], "cases", "<=", 0, digits=0),
        Figure("api_fuzz_network_errors", counts["network_errors"], "requests", "<=", 0, digits=0),
    ])


if __name__ == "__main__":
    main()

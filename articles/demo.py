"""The demo knowledge base shipped in articles/fixtures/demo/ (a fictional business)."""
from __future__ import annotations

import json
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent / "fixtures" / "demo"
DEMO_SLUG = "demo"
DEMO_NAME = "Demo knowledge base"
# Everything but the build script's sources: the committed PDFs are what gets imported.
DEMO_SOURCES = ["faq.json", "faq-legacy.csv", "pages", "guides", "docs"]


def demo_paths() -> list[Path]:
    return [DEMO_DIR / name for name in DEMO_SOURCES if (DEMO_DIR / name).exists()]


def demo_questions() -> list[dict]:
    lines = (DEMO_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def demo_planted() -> dict:
    return json.loads((DEMO_DIR / "planted.json").read_text(encoding="utf-8"))

"""Selectors only read: no selector module imports a service or the detector, and every import sits in the module's
one top block (none inside functions, none appended later), so what a selector reaches is visible at the top."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELECTOR_MODULES = [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "conflicts" / "selectors").glob("*.py")),
    "articles/selectors.py",
    "articles/sources_selectors.py",
]
# Modules that write or run the detector: a selector may not reach them.
FORBIDDEN = ("conflicts.services", "articles.services", "articles.sources", "articles.sources_drift", "agents.detection",
             "conflicts.jobs", "articles.jobs")


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            yield node, [node.module or ""]


@pytest.mark.parametrize("path", SELECTOR_MODULES)
def test_a_selector_module_imports_no_writer_and_imports_only_at_the_top(path):
    tree = ast.parse((ROOT / path).read_text())
    reached = [name for _, names in _imports(tree) for name in names
               if name in FORBIDDEN or name.startswith(tuple(f"{f}." for f in FORBIDDEN))]
    assert reached == []
    top_block_end = next(i for i, node in enumerate(tree.body) if not isinstance(node, ast.Import | ast.ImportFrom | ast.Expr))
    top = {id(node) for node in tree.body[:top_block_end]}
    elsewhere = [f"line {node.lineno}" for node, _ in _imports(tree) if id(node) not in top]
    assert elsewhere == []

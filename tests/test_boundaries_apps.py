"""Dependencies point one way: conflicts → agents → articles → kbreview (tests/agents/test_boundaries.py checks agents).

articles imports neither app above it: what conflicts shows on its pages comes through kbreview.panels. kbreview
imports no app, except the project's entry points and the shell's views: the root URLconf (which mounts the
API), wsgi.py (which loads the encoder) and kbreview/views/shell.py (the dashboard and the knowledge-base switch
need the memberships articles keeps); none of them imports conflicts but the URLconf."""
from pathlib import Path

import pytest

from tests.agents.test_boundaries import imported_modules

ROOT = Path(__file__).resolve().parents[1]
PROJECT_ENTRY_POINTS = {"kbreview/urls.py", "kbreview/wsgi.py", "kbreview/views/shell.py"}


def offenders(app: str, forbidden: tuple[str, ...], *, exempt: set[str] = frozenset()) -> dict[str, list[str]]:
    found = {}
    for path in (ROOT / app).rglob("*.py"):
        name = str(path.relative_to(ROOT))
        if name in exempt or "migrations" in path.parts:
            continue
        bad = sorted(m for m in imported_modules(path) if m.split(".")[0] in forbidden)
        if bad:
            found[name] = bad
    return found


def test_articles_imports_neither_conflicts_nor_agents():
    assert offenders("articles", ("conflicts", "agents")) == {}


def test_kbreview_imports_no_app_but_at_its_entry_points():
    assert offenders("kbreview", ("conflicts", "agents", "articles"), exempt=PROJECT_ENTRY_POINTS) == {}


@pytest.mark.parametrize("entry_point", sorted(PROJECT_ENTRY_POINTS - {"kbreview/urls.py"}))
def test_the_shell_imports_no_conflicts(entry_point):
    assert not [m for m in imported_modules(ROOT / entry_point) if m.split(".")[0] in ("conflicts", "agents")]

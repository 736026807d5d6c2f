"""agents holds algorithms over plain data: it never reads Django settings nor imports conflicts (above it), nor
articles (whose modules read settings and models: what agents needs from it, such as the encoder, is passed in as a
callable).

Only its Django entry points may: agents/apps.py, agents/configuration.py (settings -> LLMConfig values)
and agents/management/ (commands). Every import counts, those inside functions too (ast.walk sees them all)."""
import ast
from pathlib import Path

AGENTS = Path(__file__).resolve().parents[2] / "agents"
ENTRY_POINTS = {AGENTS / "apps.py", AGENTS / "configuration.py"}
FORBIDDEN_PACKAGES = ("django", "conflicts", "articles", "kbreview")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_agents_algorithms_import_no_django_and_no_app_above_them():
    offenders = {}
    for path in AGENTS.rglob("*.py"):
        if path in ENTRY_POINTS or "management" in path.relative_to(AGENTS).parts:
            continue
        bad = sorted(m for m in imported_modules(path)
                     if m.split(".")[0] in FORBIDDEN_PACKAGES or m == "agents.configuration")
        if bad:
            offenders[str(path.relative_to(AGENTS))] = bad
    assert offenders == {}


def test_the_scan_sees_the_entry_points_it_exempts():
    assert "django.conf" in imported_modules(AGENTS / "configuration.py")


def test_the_scan_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "lazy.py"
    module.write_text("def f():\n    from articles.embeddings import embed_texts\n    return embed_texts\n")
    assert imported_modules(module) == {"articles.embeddings"}

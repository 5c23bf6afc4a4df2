"""grader/engine.py only plans, runs and combines: the re-judging of finished checks
(the check registry, the diagnoses) lives in the run strategy that needs it
(grader/runs/second.py), and no finished report is rewritten in the engine."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "grader" / "engine.py"
FORBIDDEN = ("grader.checks.registry", "grader.diagnose", "grader.checks.diagnoses")


def engine_tree() -> ast.Module:
    return ast.parse(ENGINE.read_text(encoding="utf-8"), filename=str(ENGINE))


def imported_modules(tree: ast.Module) -> set[str]:
    """Every module the engine imports, `from a import b` counted as `a` and `a.b`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def forbidden(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in FORBIDDEN)


def test_the_engine_imports_neither_the_check_registry_nor_the_diagnoses() -> None:
    imported = imported_modules(engine_tree())
    assert imported, "the engine imports nothing: wrong file?"
    assert sorted(m for m in imported if forbidden(m)) == []


def test_the_forbidden_names_cover_the_old_and_new_diagnoses_modules() -> None:
    assert forbidden("grader.diagnose") and forbidden("grader.checks.diagnoses.catalogue")
    assert forbidden("grader.checks.registry") and not forbidden("grader.checks.integrity")
    code = "from grader import diagnose\nfrom grader.checks import registry\n"
    imported = imported_modules(ast.parse(code))
    assert {"grader.diagnose", "grader.checks.registry"} <= {m for m in imported if forbidden(m)}


def test_the_engine_never_rewrites_a_finished_report() -> None:
    calls = [
        node
        for node in ast.walk(engine_tree())
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "replace")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "replace")
        )
    ]
    assert [ast.unparse(call) for call in calls] == []

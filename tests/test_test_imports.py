"""Every import a test makes of our own code names something that exists.

Many tests import inside the test function (Django must be set up first), so a name that
moved out of a module is only noticed when that one test runs. After a move (issue 28) two
such imports were left pointing at a module that no longer re-exported the name, and only
the full suite in CI found them. This test reads every test file and resolves each
`from <ours> import <name>` at once.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
OURS = {
    "grader",
    *(path.name for path in (ROOT / "platform").iterdir() if (path / "apps.py").exists()),
}


def _imports_of_ours(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each `from <ours> import <name>` in `path`, wherever it stands."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] in OURS
        ):
            found += [(node.lineno, str(node.module), alias.name) for alias in node.names]
    return found


def _resolves(module: str, name: str) -> bool:
    imported = importlib.import_module(module)
    if hasattr(imported, name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return False
    return True


def test_every_name_a_test_imports_from_our_code_exists() -> None:
    missing = [
        f"{path.relative_to(ROOT)}:{line}: from {module} import {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, module, name in _imports_of_ours(path)
        if not _resolves(module, name)
    ]

    assert missing == []


def test_a_name_that_is_not_there_is_reported() -> None:
    assert not _resolves("grader.protocol", "no_such_name_anywhere")
    assert _resolves("grader.protocol", "Envelope")
    assert _resolves("grader", "runs")

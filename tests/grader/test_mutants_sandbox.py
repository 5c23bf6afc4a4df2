"""Auto-mutants of a real course package, graded through the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.__main__ import main
from grader.authoring.mutants import MutantResult, run_mutants, table
from grader.cache import ReferenceCache
from grader.sandbox.base import Sandbox
from grader.spec import MANIFEST, load_package

pytestmark = pytest.mark.sandbox

RETAIN_GRAPH = Path(__file__).resolve().parents[2] / "exercises" / "retain-graph"


@pytest.fixture(scope="module")
def results(sandbox: Sandbox, reference_cache: ReferenceCache) -> dict[str, MutantResult]:
    package = load_package(RETAIN_GRAPH)
    graded = run_mutants(package, sandbox=sandbox, cache=reference_cache)
    print(table(package.slug, package.solution, graded))
    return {result.mutant.name: result for result in graded}


def test_every_mutant_of_retain_graph_is_graded_without_a_grading_error(
    results: dict[str, MutantResult],
) -> None:
    assert len(results) >= 6
    assert {r.outcome for r in results.values()} <= {"caught", "survived", "equivalent"}


def test_dropping_retain_graph_is_caught_as_the_freed_graph_error(
    results: dict[str, MutantResult],
) -> None:
    dropped = results["drop-retain-graph@6"]
    assert (dropped.outcome, dropped.detail) == ("caught", "freed-graph")


def test_cutting_the_graph_is_caught_as_graph_broken(results: dict[str, MutantResult]) -> None:
    for name in ("detach-mid-graph@4", "drop-requires-grad@3"):
        assert (results[name].outcome, results[name].detail) == ("caught", "graph-broken")


def test_the_backward_expected_to_fail_in_try_is_left_alone(
    results: dict[str, MutantResult],
) -> None:
    assert not [name for name in results if name.endswith("@12")]


SMALL = {
    "exercise.toml": 'slug = "small"\ntitle = "Small"\nkind = "script"\npoints = 1\n'
    'names = ["x"]\ndevice = "cpu"\n'
    '[[checks]]\nname = "runs"\ntype = "no_error"\npoints = 1\n',
    "statement.md": "# Small\n",
    "starter.py": "import torch\n",
    "solution.py": "import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x ** 2\n"
    "y.backward()\n",
}


def write_package(root: Path, extra: str = "") -> Path:
    folder = root / "small"
    folder.mkdir(exist_ok=True)
    for name, text in SMALL.items():
        (folder / name).write_text(text + (extra if name == MANIFEST else ""), encoding="utf-8")
    return folder


def test_the_cli_fails_on_a_survivor_and_shows_its_diff_until_it_is_declared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache"), "--zygote"]
    # Only "runs without an error" is checked: the hand-written .grad cannot be caught.
    assert main(["mutants", str(write_package(tmp_path)), *cache]) == 1
    out = capsys.readouterr().out
    assert "hand-written-grad@4 " in out and "survived" in out
    assert "survivor hand-written-grad@4" in out and "+x.grad = _t.tensor(4.0" in out
    declared = '[[equivalent_mutant]]\nname = "hand-written-grad@4"\nreason = "not checked"\n'
    assert main(["mutants", str(write_package(tmp_path, declared)), *cache]) == 0
    assert "equivalent (not checked)" in capsys.readouterr().out

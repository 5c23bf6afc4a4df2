"""Auto-mutants of a real course package, graded through the real sandbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader.__main__ import main
from grader.authoring.mutants import MutantResult, judge, plan_mutants, run_mutants, table
from grader.cache import ReferenceCache
from grader.engine import DEV_SEED, GradeJob, grade_with_capture
from grader.protocol import SandboxRequest, SandboxResult
from grader.runs.reference import reference_capture
from grader.runs.second import scaled_reference
from grader.sandbox.base import Sandbox
from grader.spec import MANIFEST, load_package

pytestmark = pytest.mark.sandbox

RETAIN_GRAPH = Path(__file__).resolve().parents[2] / "exercises" / "retain-graph"
CHAIN_RULE = RETAIN_GRAPH.parent / "chain-rule"


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


@dataclass
class CountingSandbox:
    """A real backend that records the id of every job it runs."""

    inner: Sandbox
    jobs: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    def runtime_key(self, device: str) -> str:
        return self.inner.runtime_key(device)

    def run(self, request: SandboxRequest) -> SandboxResult:
        self.jobs.append(request.job_id)
        return self.inner.run(request)

    def close(self) -> None:
        """The inner backend belongs to the session."""


def test_a_mutant_is_judged_on_its_first_failing_run_where_a_learner_gets_every_run(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = load_package(CHAIN_RULE)
    where = {"seed": DEV_SEED, "device": "cpu", "sandbox": sandbox, "cache": reference_cache}
    reference = reference_capture(package, **where)
    scaled = scaled_reference(package, reference, **where)
    plan = plan_mutants(package, reference, scaled)
    counting = CountingSandbox(sandbox)
    for mutant in plan.mutants:
        counting.jobs.clear()
        learner, _ = grade_with_capture(
            GradeJob(package, mutant.source), sandbox=counting, cache=reference_cache,
            reference=reference, scaled=scaled,
        )  # fmt: skip
        if learner.passed or len(counting.jobs) < 2:
            continue  # passes, or fails with nothing after its first run
        counting.jobs.clear()
        result = judge(
            plan, mutant, sandbox=counting, seed=DEV_SEED, device="cpu", cache=reference_cache
        )
        assert len(counting.jobs) == 1, counting.jobs
        assert result.outcome == "caught", result
        failed = {check.diagnosis for check in learner.checks if not check.passed}
        assert set(result.diagnoses) <= failed
        return
    pytest.fail("no mutant of chain-rule fails its first run with a second run to come")

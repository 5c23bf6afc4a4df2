"""`python -m grader.bench` prints its figures (it asserts no timing, and neither do we)."""

from __future__ import annotations

import re

import pytest
from sandbox_helpers import docker_unavailable_reason

from grader import bench

pytestmark = pytest.mark.sandbox

RATE = re.compile(r"^(?P<path>cold|warm|zygote)\s+(?P<rate>\d+)$")
DOCKER_ROWS = {
    "sandbox, real harness, empty submission, docker cold",
    "sandbox, real harness, empty submission, docker zygote",
}
FIGURES = re.compile(r"^(?P<label>.+?)\s+(?P<min>\d+)\s+(?P<median>\d+)\s+(?P<p95>\d+)$")


@pytest.mark.docker  # it measures the Docker backend too where an Engine is reachable
def test_the_benchmark_prints_min_median_and_p95_for_each_measure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A function exercise: one sandbox run a grading (a script's grading adds a scaled run),
    # and the benchmark runs about twenty gradings, most of them in cold sandboxes.
    bench.main(["--runs", "1", "--exercise", "safe-backward"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gradlab grading latency: safe-backward, bubblewrap torch-")
    rows = {m["label"].strip(): m for m in map(FIGURES.match, lines[2:]) if m}
    docker = docker_unavailable_reason() is None
    assert set(rows) - DOCKER_ROWS == {
        "grade, reference cache cold (reference runs too)",
        "grade, reference cache warm (learner runs only)",
        "grade, cache warm, sandbox warm (spare ready)",
        "grade, cache warm, zygote",
        "sandbox, empty job, no torch import",
        "sandbox, real harness, empty submission",
        "sandbox, real harness, empty submission, zygote",
    }
    assert set(rows) & DOCKER_ROWS == (DOCKER_ROWS if docker else set())
    ratio = "docker zygote against docker cold " if docker else "docker: not measured ("
    assert [line for line in lines if line.startswith(ratio)]
    for row in rows.values():
        assert int(row["min"]) <= int(row["median"]) <= int(row["p95"])
    rates = {m["path"]: float(m["rate"]) for m in map(RATE.match, lines) if m}
    assert set(rates) == {"cold", "warm", "zygote"} and all(r > 0 for r in rates.values())
    assert lines[-1].startswith("zygote against cold ")


def test_p95_is_the_nearest_rank_of_the_sorted_runs() -> None:
    figures = bench.Figures("x", tuple(float(v) for v in range(1, 21)))
    assert figures.line().split()[1:] == ["1000", "10500", "19000"]

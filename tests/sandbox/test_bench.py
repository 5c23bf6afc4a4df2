"""`python -m grader.authoring.bench` prints its figures (it asserts no timing, nor do we)."""

from __future__ import annotations

import re

import pytest

from grader.authoring import bench

pytestmark = pytest.mark.sandbox

FIGURES = re.compile(r"^(?P<label>.+?)\s+(?P<min>\d+)\s+(?P<median>\d+)\s+(?P<p95>\d+)$")


def test_the_benchmark_command_prints_min_median_and_p95_on_its_smallest_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The smallest input: one run of the sandbox figures alone, on a function exercise (no
    # scaled run). `make bench` and `python -m grader.authoring.bench` take every figure; the suite
    # only checks that the command works and prints its table.
    bench.main(["--runs", "1", "--exercise", "safe-backward", "--measures", "sandbox"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gradlab grading latency: safe-backward, bubblewrap torch-")
    assert lines[1].split() == ["min", "ms", "median", "ms", "p95", "ms"]
    rows = {m["label"].strip(): m for m in map(FIGURES.match, lines[2:]) if m}
    assert set(rows) == {
        "sandbox, empty job, no torch import",
        "sandbox, real harness, empty submission",
        "sandbox, real harness, empty submission, zygote",
    }
    for row in rows.values():
        assert int(row["min"]) <= int(row["median"]) <= int(row["p95"])


def test_the_benchmark_refuses_a_measure_it_does_not_know() -> None:
    with pytest.raises(SystemExit):
        bench.main(["--measures", "sandbox,speed"])


def test_p95_is_the_nearest_rank_of_the_sorted_runs() -> None:
    figures = bench.Figures("x", tuple(float(v) for v in range(1, 21)))
    assert figures.line().split()[1:] == ["1000", "10500", "19000"]

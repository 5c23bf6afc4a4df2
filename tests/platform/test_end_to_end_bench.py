"""scripts/bench.py (`make bench`) prints its paths side by side and the zygote's ratios; it
asserts no timing, and neither do we. These check its arithmetic and its output's form on
given figures (a real run starts the whole stack three times: see the README)."""

from __future__ import annotations

import sys
from types import ModuleType

from gradlab_fixtures import EXERCISES, ROOT


def _bench() -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench

    return bench


def _figures(bench: ModuleType, path: str, idle_s: float, job_s: float, drain_s: float) -> object:
    figures = bench.PathFigures(path)
    figures.idle = [idle_s, idle_s, 3 * idle_s]
    for name in ("posted", "claimed", "graded", "sandbox_run", "read"):
        setattr(figures, name, [idle_s / 4] * 3)
    figures.sandbox_job = [job_s] * 3
    figures.burst, figures.drain_s = 300, drain_s
    figures.verdicts = "150/150 right ones passed, 0/150 wrong ones passed"
    return figures


def test_the_table_has_one_column_per_path_and_a_row_per_measure() -> None:
    bench = _bench()
    rows = bench.table(
        [_figures(bench, "cold", 1.2, 1.4, 300.0), _figures(bench, "zygote", 0.2, 0.05, 30.0)]
    )
    assert rows[0].split() == ["cold", "zygote"]
    cells = {line[: bench.LABEL].strip(): line[bench.LABEL :].split() for line in rows[1:]}
    assert cells["POST -> graded, idle, p50 ms"] == ["1200", "200"]
    assert cells["POST -> graded, idle, p95 ms"] == ["3600", "600"]
    assert cells["sandbox job alone, p50 ms"] == ["1400", "50"]
    assert cells["burst of 300: drained in s"] == ["300.0", "30.0"]
    assert cells["burst of 300: gradings a minute"] == ["60", "600"]
    assert "burst verdicts, zygote: 150/150 right ones passed, 0/150 wrong ones passed" in rows


def test_the_ratios_compare_the_zygote_with_each_other_path() -> None:
    bench = _bench()
    lines = bench.ratios(
        [
            _figures(bench, "cold", 1.2, 1.4, 300.0),
            _figures(bench, "warm", 0.6, 0.07, 150.0),
            _figures(bench, "zygote", 0.2, 0.05, 30.0),
        ]
    )
    assert lines == [
        "zygote against cold (x: times as fast): POST -> graded p50 6.0x, sandbox job p50 28.0x, "
        "burst gradings a minute 10.0x",
        "zygote against warm (x: times as fast): POST -> graded p50 3.0x, sandbox job p50 1.4x, "
        "burst gradings a minute 5.0x",
    ]


def test_the_burst_alternates_the_solution_and_the_known_wrong_solutions() -> None:
    bench = _bench()
    codes = bench.burst_codes(10)
    solution = (EXERCISES / "chain-rule" / "solution.py").read_text(encoding="utf-8")
    wrong = {
        path.read_text(encoding="utf-8") for path in (EXERCISES / "chain-rule" / "wrong").iterdir()
    }
    assert [should for _, should in codes] == [True, False] * 5
    assert all(code == solution for code, should in codes if should)
    assert {code for code, should in codes if not should} <= wrong
    assert len({code for code, should in codes if not should}) == min(5, len(wrong))


def test_p95_is_the_nearest_rank_and_p50_the_median() -> None:
    bench = _bench()
    values = [float(v) for v in range(1, 21)]
    assert bench.quantile(values, 0.95) == 19.0
    assert bench.quantile(values, 0.5) == 10.5

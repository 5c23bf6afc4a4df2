"""The test lanes (tests/lanes.py): what marks a test slow, and the guard that fails a test
which starts a sandbox, Docker, a worker or a browser without saying so."""

from __future__ import annotations

import sys
from pathlib import Path

import lanes
import pytest
from lanes import (
    FAST_LANE,
    SQLITE_PASS,
    WITHOUT_REAL_PARTS,
    marker_for_command,
    marker_for_socket,
    markers_for,
    start_rank,
)

TESTS_DIR = Path(__file__).resolve().parent


def test_a_folder_of_sandbox_tests_marks_each_of_its_tests() -> None:
    assert markers_for("sandbox", [], []) == {"sandbox"}
    assert markers_for("docker", [], []) == {"docker"}
    assert markers_for("platform", [], []) == set()


def test_a_worker_fixture_marks_the_test_worker_and_sandbox() -> None:
    assert markers_for("platform", ["db", "start_worker"], []) == {"worker", "sandbox", "database"}
    assert markers_for("browser", ["signed_in"], []) == {"browser"}
    assert markers_for("grader", ["grade_code"], []) == {"sandbox"}


def test_the_docker_parameter_of_a_backend_fixture_marks_that_case_docker() -> None:
    assert markers_for("sandbox", ["backend"], ["docker"]) == {"sandbox", "docker"}
    assert markers_for("sandbox", ["backend"], ["bubblewrap"]) == {"sandbox"}


@pytest.mark.parametrize(
    ("argv", "needed"),
    [
        (["/usr/bin/bwrap", "--ro-bind", "/", "/"], "sandbox"),
        (["docker", "compose", "up"], "docker"),
        (["bash", "docker/build-sandbox-image.sh"], "docker"),
        ([sys.executable, "-m", "celery", "-A", "config.celery_app", "worker"], "worker"),
        (["bash", "/repo/scripts/run.sh"], "worker"),
        ([sys.executable, "-m", "grader", "run", "pkg", "answer.py"], "sandbox"),
        (["/venv/lib/python3.11/site-packages/playwright/driver/node", "cli.js"], "browser"),
        ([sys.executable, "-m", "grader", "check", "exercises/"], None),
        (["git", "clone", "repo", "copy"], None),
        ([sys.executable, "-c", "print(1)"], None),
    ],
)
def test_a_command_needs_the_marker_of_what_it_starts(argv: list[str], needed: str | None) -> None:
    assert marker_for_command(argv[0], argv) == needed


def test_a_connection_to_the_docker_socket_needs_the_docker_marker() -> None:
    assert marker_for_socket("/var/run/docker.sock") == "docker"
    assert marker_for_socket(("127.0.0.1", 5432)) is None


GUARDED_TESTS = """
import subprocess
import pytest

def fake(tmp_path, name):
    tool = tmp_path / name
    tool.write_text("#!/bin/sh\\nexit 0\\n")
    tool.chmod(0o755)
    return str(tool)

def test_unmarked_starts_bwrap(tmp_path):
    subprocess.run([fake(tmp_path, "bwrap"), "--version"], check=True)

def test_unmarked_swallows_the_refusal(tmp_path):
    try:
        subprocess.run([fake(tmp_path, "docker"), "ps"], check=True)
    except Exception:
        pass

@pytest.mark.sandbox
def test_marked_starts_bwrap(tmp_path):
    subprocess.run([fake(tmp_path, "bwrap"), "--version"], check=True)

def test_unmarked_runs_git(tmp_path):
    subprocess.run(["git", "--version"], check=True, capture_output=True)

@pytest.fixture
def start_worker():
    return "pretend"

def test_uses_the_worker_fixture(start_worker):
    pass
"""

LANE_PLUGIN = f"""
import sys
sys.path.insert(0, {str(TESTS_DIR)!r})
pytest_plugins = ["lanes"]
"""


@pytest.fixture
def no_plugin_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest runs below load only the plugins they name (the installed ones, Django's,
    hypothesis's, schemathesis's, cost each of their processes ~1 s to start)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def guarded(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(LANE_PLUGIN)
    pytester.makepyfile(test_guarded=GUARDED_TESTS)
    pytester.makeini("[pytest]\nmarkers =\n    sandbox\n    docker\n    browser\n    worker\n")
    return pytester


@pytest.mark.processes  # a pytest subprocess
def test_starting_a_sandbox_without_its_marker_fails_even_when_the_error_is_swallowed(
    guarded: pytest.Pytester, no_plugin_autoload: None
) -> None:
    result = guarded.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*bwrap --version` but is not marked `sandbox`: add @pytest.mark.sandbox*",
            "*docker ps` but is not marked `docker`: add @pytest.mark.docker*",
            "FAILED test_guarded.py::test_unmarked_starts_bwrap*",
            "FAILED test_guarded.py::test_unmarked_swallows_the_refusal*",
        ]
    )


def test_the_fast_lane_leaves_out_a_test_that_uses_a_worker_fixture(
    guarded: pytest.Pytester,
) -> None:
    result = guarded.runpytest_inprocess(
        "-p", "no:django", "-p", "no:cacheprovider", "-m", FAST_LANE, "--collect-only", "-q"
    )

    collected = "\n".join(result.outlines)
    assert "test_uses_the_worker_fixture" not in collected
    assert "test_marked_starts_bwrap" not in collected
    assert "test_unmarked_runs_git" in collected
    assert "3/5 tests collected (2 deselected)" in collected


def test_the_fast_lane_expression_leaves_out_every_slow_marker() -> None:
    assert FAST_LANE == (
        "not sandbox and not docker and not browser and not worker and not processes and not heavy"
    )


def test_the_makefile_fast_lane_is_the_one_the_guard_knows() -> None:
    makefile = (TESTS_DIR.parent / "Makefile").read_text()
    assert f"FAST_LANE := {FAST_LANE}\n" in makefile


def test_the_sqlite_pass_leaves_out_the_real_parts_and_what_has_no_database() -> None:
    script = (TESTS_DIR.parent / "scripts" / "test.sh").read_text()
    assert WITHOUT_REAL_PARTS == "not sandbox and not docker and not browser and not worker"
    assert f"{WITHOUT_REAL_PARTS} and (database or processes)" == SQLITE_PASS
    assert SQLITE_PASS in lanes.FEWER_EXAMPLES_LANES  # its property tests try a third
    assert f'set -- -m "{SQLITE_PASS}" "$@"\n' in script


def test_a_database_fixture_marks_the_test_database() -> None:
    for fixture in ("db", "transactional_db", "live_server"):
        assert markers_for("platform", [fixture], []) == {"database"}
    assert markers_for("platform", ["settings", "tmp_path"], []) == set()


def test_the_fast_lane_leaves_out_processes_and_seconds_and_the_sqlite_pass_what_has_no_database(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(LANE_PLUGIN)
    pytester.makeini(
        "[pytest]\nmarkers =\n    sandbox\n    docker\n    browser\n    worker\n    processes\n"
        "    heavy\n    database\n    django_db\n"
    )
    pytester.makepyfile(
        test_kinds=(
            "import pytest\n\ndef test_fast():\n    pass\n\n"
            "@pytest.mark.processes\ndef test_starts_an_interpreter():\n    pass\n\n"
            "@pytest.mark.heavy\ndef test_fuzzes_for_seconds():\n    pass\n\n"
            "@pytest.fixture\ndef web_server():\n    return 'http://127.0.0.1:1'\n\n"
            "def test_uses_gunicorn(web_server):\n    pass\n\n"
            "@pytest.mark.django_db\ndef test_reads_rows():\n    pass\n\n"
            "@pytest.fixture\ndef db():\n    return None\n\n"
            "def test_writes_rows(db):\n    pass\n"
        )
    )
    on_a_database = ["test_reads_rows", "test_writes_rows"]
    everything = [
        *on_a_database,
        "test_fast",
        "test_starts_an_interpreter",
        "test_fuzzes_for_seconds",
        "test_uses_gunicorn",
    ]
    lanes_and_tests = [
        (FAST_LANE, ["test_fast", *on_a_database]),
        (WITHOUT_REAL_PARTS, everything),
        (SQLITE_PASS, ["test_starts_an_interpreter", "test_uses_gunicorn", *on_a_database]),
        ("", everything),
    ]

    for markexpr, expected in lanes_and_tests:
        result = pytester.runpytest_inprocess(
            "-p", "no:django", "-p", "no:cacheprovider", "-m", markexpr, "--collect-only", "-q"
        )
        collected = [line.split("::")[1] for line in result.outlines if "::" in line]
        assert sorted(collected) == sorted(expected), markexpr


def test_a_browser_test_starts_first_and_a_sandbox_test_before_the_fast_ones() -> None:
    assert start_rank(["browser", "sandbox"]) == 0
    assert start_rank(["worker", "sandbox"]) < start_rank(["docker"]) < start_rank(["sandbox"])
    assert start_rank(["sandbox"]) < start_rank([]) == start_rank(["django_db"])


def test_the_slowest_kinds_start_first_and_each_module_keeps_its_order(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(LANE_PLUGIN)
    pytester.makeini("[pytest]\nmarkers =\n    sandbox\n    docker\n    browser\n    worker\n")
    pytester.makepyfile(
        test_a_fast="def test_one():\n    pass\n\ndef test_two():\n    pass\n",
        test_b_mixed=(
            "import pytest\n\ndef test_fast_first():\n    pass\n\n"
            "@pytest.mark.sandbox\ndef test_sandboxed():\n    pass\n"
        ),
        test_c_browser="import pytest\n\n@pytest.mark.browser\ndef test_story():\n    pass\n",
    )

    result = pytester.runpytest_inprocess(
        "-p", "no:django", "-p", "no:cacheprovider", "--collect-only", "-q"
    )

    assert [line for line in result.outlines if "::" in line] == [
        "test_c_browser.py::test_story",
        "test_b_mixed.py::test_fast_first",
        "test_b_mixed.py::test_sandboxed",
        "test_a_fast.py::test_one",
        "test_a_fast.py::test_two",
    ]


@pytest.mark.processes  # two xdist workers
def test_under_xdist_each_module_runs_whole_in_one_process_and_both_processes_work(
    pytester: pytest.Pytester, no_plugin_autoload: None
) -> None:
    pytester.makeconftest(LANE_PLUGIN)
    pytester.makeini("[pytest]\nmarkers =\n    sandbox\n    docker\n    browser\n    worker\n")
    seen = pytester.path / "seen.txt"
    record = (
        "import os, pytest\n\n"
        "@pytest.mark.parametrize('n', range(6))\n"
        "def test_record(n):\n"
        f"    with open({str(seen)!r}, 'a') as out:\n"
        "        out.write(f\"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n\")\n"
    )
    pytester.makepyfile(**{f"test_{name}": record for name in "abcd"})

    result = pytester.runpytest_inprocess("-p", "xdist", "-p", "no:cacheprovider", "-n", "2")

    result.assert_outcomes(passed=24)
    processes: dict[str, set[str]] = {}
    for line in seen.read_text().splitlines():
        module, process = line.split()
        processes.setdefault(module, set()).add(process)
    assert sorted(processes) == ["test_a", "test_b", "test_c", "test_d"]
    assert all(len(ran_in) == 1 for ran_in in processes.values()), processes
    assert set().union(*processes.values()) == {"gw0", "gw1"}


@pytest.mark.parametrize(
    ("markexpr", "tried"),
    [(FAST_LANE, 10), (WITHOUT_REAL_PARTS, 10), ("not browser", 30)],
)
def test_a_property_test_tries_a_third_of_its_examples_in_the_fast_lane_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, markexpr: str, tried: int
) -> None:
    monkeypatch.setattr(lanes, "_fast_lane", lanes._fast_lane)  # the run below sets it here
    pytester.makeconftest(LANE_PLUGIN)
    pytester.makeini("[pytest]\nmarkers =\n    sandbox\n    docker\n    browser\n    worker\n")
    pytester.makepyfile(
        test_count=f"from lanes import examples\n\ndef test_count():\n"
        f"    assert examples(30) == {tried}\n"
    )

    result = pytester.runpytest_inprocess(
        "-p", "no:django", "-p", "no:cacheprovider", "-m", markexpr
    )

    result.assert_outcomes(passed=1)

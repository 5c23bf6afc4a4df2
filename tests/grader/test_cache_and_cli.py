"""The reference cache (pure) and the instructor CLI (through the real sandbox)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grading_helpers import REPO, TEST_PACKAGES

from grader.__main__ import EXIT_BAD_INPUT, main, parser
from grader.cache import DEFAULT_CACHE_DIR, ReferenceCache, cache_key


def test_cache_round_trips_json_and_ignores_corrupt_entries(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path / "cache")
    key = cache_key("abc", 1, "bubblewrap torch-2.13.0 cpu", "cpu")
    assert cache.get(key) is None
    cache.put(key, {"protocol": 1, "values": ["nan", 1.5]})
    assert cache.get(key) == {"protocol": 1, "values": ["nan", 1.5]}
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [f"{key}.json"]
    (tmp_path / "cache" / f"{key}.json").write_text("{truncated")
    assert cache.get(key) is None
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def test_cache_key_separates_seed_runtime_and_device() -> None:
    base = cache_key("h", 1, "bubblewrap torch-2.13.0 cpu", "cpu")
    assert base != cache_key("h", 2, "bubblewrap torch-2.13.0 cpu", "cpu")
    assert base != cache_key("h", 1, "bubblewrap torch-2.14.0 cpu", "cpu")
    assert base != cache_key("h", 1, "bubblewrap torch-2.13.0 cpu", "cuda")
    assert base != cache_key("h", None, "bubblewrap torch-2.13.0 cpu", "cpu")


def test_cli_options_default_to_the_environment_and_the_command_line_wins() -> None:
    environ = {
        "GRADLAB_CACHE_DIR": "/srv/cache",
        "GRADLAB_DEVICE": "cuda",
        "GRADLAB_SANDBOX": "docker",
    }
    args = parser(environ).parse_args(["run", "pkg", "answer.py"])
    assert (args.cache_dir, args.device, args.sandbox) == ("/srv/cache", "cuda", "docker")
    args = parser(environ).parse_args(["check", "pkg", "--cache-dir", "c", "--device", "cpu"])
    assert (args.cache_dir, args.device) == ("c", "cpu")
    assert parser({}).parse_args(["check", "pkg"]).cache_dir == DEFAULT_CACHE_DIR


def test_cli_rejects_an_unknown_device_before_any_sandbox_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "pkg", "answer.py", "--device", "tpu"]) == EXIT_BAD_INPUT
    assert "--device: must be one of ['cpu', 'cuda'], not 'tpu'" in capsys.readouterr().err


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    # The zygote (as `make run`'s workers): each package's runs fork from one torch import.
    env = {
        **os.environ,
        "PYTHONPATH": "platform:.",
        "GRADLAB_CACHE_DIR": str(cache),
        "GRADLAB_SANDBOX_ZYGOTE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.sandbox
def test_cli_check_prints_a_line_per_run_and_exits_zero(tmp_path: Path) -> None:
    result = cli("check", str(TEST_PACKAGES / "vector-square"), cache=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok   vector-square: 4 runs, all as declared")
    assert "wrong/mean.py: expected fails with scaled-by-n" in result.stdout


@pytest.mark.sandbox
def test_cli_check_of_a_folder_fails_when_one_package_is_wrong(tmp_path: Path) -> None:
    folder = tmp_path / "exercises"
    shutil.copytree(TEST_PACKAGES / "tiny-training", folder / "tiny-training")
    manifest = folder / "tiny-training" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace('"loss-flat"', '"loss-diverges"'))
    result = cli("check", str(folder), cache=tmp_path / "cache")
    assert result.returncode == 1
    assert "FAIL tiny-training" in result.stdout
    assert "0/1 packages valid" in result.stdout


def test_cli_check_of_a_malformed_package_names_the_field(tmp_path: Path) -> None:
    folder = tmp_path / "vector-square"
    shutil.copytree(TEST_PACKAGES / "vector-square", folder)
    manifest = folder / "exercise.toml"
    manifest.write_text(manifest.read_text().replace("points = 10", "points = 12"))
    result = cli("check", str(folder), cache=tmp_path / "cache")
    assert result.returncode == 1
    assert "exercise.toml: points: is 12 but the checks' points sum to 10" in result.stdout


@pytest.mark.sandbox
def test_cli_run_prints_the_report_as_json(tmp_path: Path) -> None:
    answer = TEST_PACKAGES / "vector-square" / "wrong" / "mean.py"
    result = cli("run", str(TEST_PACKAGES / "vector-square"), str(answer), "--json", cache=tmp_path)
    assert result.returncode == 1  # graded, not passed
    report = json.loads(result.stdout)
    assert (report["status"], report["score"], report["max_score"]) == ("graded", 2.0, 10.0)
    assert {c["diagnosis"] for c in report["checks"] if not c["passed"]} == {"scaled-by-n"}
    readable = cli("run", str(TEST_PACKAGES / "vector-square"), str(answer), cache=tmp_path)
    assert "FAIL 0/4  x.grad is 8x" in readable.stdout
    assert "diagnosis: scaled-by-n" in readable.stdout


def test_cli_check_of_a_module_fails_on_a_check_tagged_with_an_undeclared_objective(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from grader.__main__ import _check_module

    shutil.copytree(REPO / "exercises" / "first-gradient", tmp_path / "first-gradient")
    (tmp_path / "module.toml").write_text(
        'slug = "m"\ntitle = "M"\nexercises = ["first-gradient"]\n'
        '[[objectives]]\nid = "backward"\ntitle = "Use backward()"\n'
    )

    ok, packages = _check_module(tmp_path)

    assert not ok and [p.name for p in packages] == ["first-gradient"]
    assert "checks[0].objectives[1]: 'read-grad' is not an objective of the module" in (
        capsys.readouterr().out
    )

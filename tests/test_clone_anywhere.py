"""A clone anywhere grades: in a private home (mode 0700, as root's is on Debian) under a path
with spaces, `python -m grader run` of the clone grades an answer in the real sandbox. The
sandbox never reads the checkout (its runtime and the published harness live at neutral
places), so where the repository lives does not matter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "exercises/chain-rule"
GRADE_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def clone_in_private_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed repository, cloned into `<tmp>/private home/my projects/grad lab`
    (one clone for the module: its reference cache is shared by the two gradings)."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone the repository")
    home = tmp_path_factory.mktemp("clone") / "private home"
    home.mkdir(mode=0o700)
    home.chmod(0o700)  # whatever the umask
    clone = home / "my projects" / "grad lab"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return clone


def grade_in(clone: Path, answer: str) -> subprocess.CompletedProcess[str]:
    env = {  # nothing of this test run's environment: only the clone
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{clone / 'platform'}{os.pathsep}{clone}",
        "GRADLAB_SANDBOX": "bubblewrap",
    }
    return subprocess.run(
        [sys.executable, "-m", "grader", "run", EXERCISE, answer, "--json",
         "--cache-dir", str(clone / "var" / "reference-cache")],
        cwd=clone, env=env, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S, check=False,
    )  # fmt: skip


def test_a_clone_in_a_private_home_with_spaces_grades_in_the_sandbox(
    clone_in_private_home: Path,
) -> None:
    clone = clone_in_private_home
    assert (clone.parent.parent.stat().st_mode & 0o777) == 0o700
    assert " " in str(clone)

    result = grade_in(clone, f"{EXERCISE}/solution.py")

    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "graded", report
    assert report["passed"] is True
    assert report["score"] == report["max_score"] > 0


def test_a_wrong_answer_in_that_clone_is_graded_with_its_diagnosis(
    clone_in_private_home: Path,
) -> None:
    result = grade_in(clone_in_private_home, f"{EXERCISE}/wrong/backward-y-then-z.py")

    assert result.returncode == 1, result.stdout + result.stderr  # graded, not passed
    report = json.loads(result.stdout)
    assert report["status"] == "graded"
    assert report["score"] < report["max_score"]
    assert any(not check["passed"] for check in report["checks"])

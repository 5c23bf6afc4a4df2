"""The trusted capture on the Docker backend (issue 10; the harness is the same as under
bubblewrap, the container's seccomp profile lies under the child's own filter): a capture
forged on the protocol descriptor and a replaced autograd engine are flagged, a function
exercise's learner container holds no exercise code, and the reference still passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_helpers import ROOT

from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.sandbox.docker import DockerSandbox
from grader.spec import Package, load_package

pytestmark = pytest.mark.docker

ROOMY = "\n[limits]\nwall_seconds = 90\n"


def roomy(exercise: str) -> Package:
    files = dict(load_package(ROOT / "exercises" / exercise).files)
    files["exercise.toml"] += ROOMY
    return Package.from_files(files)


def tamper_kinds(flags: tuple[object, ...]) -> set[str]:
    return {flag.detail.split(":", 1)[0] for flag in flags}  # type: ignore[attr-defined]


def test_forged_captures_and_a_replaced_engine_are_flagged_through_docker(
    docker_sandbox: DockerSandbox, tmp_path: Path
) -> None:
    package = roomy("chain-rule")
    cache = ReferenceCache(tmp_path)
    forged = (
        "import json, os, socket, struct\n"
        "message = json.dumps({'type': 'result', 'body': {'stdout': ''}}).encode()\n"
        "socket.socket(fileno=3).sendall(struct.pack('>I', len(message)) + message)\n"
        "os._exit(0)\n"
    )
    engine = (
        "import torch\n"
        "x = torch.tensor(2.0, requires_grad=True)\n"
        "z = (3 * x + 4) ** 2\n"
        "def no_engine(*args, **kwargs):\n"
        "    x.grad = torch.tensor(60.0)\n"
        "torch.autograd._engine_run_backward = no_engine\n"
        "z.backward()\n"
    )
    first = grade(GradeJob(package, forged), sandbox=docker_sandbox, cache=cache)
    assert "socket" in tamper_kinds(first.integrity_flags)
    second = grade(GradeJob(package, engine), sandbox=docker_sandbox, cache=cache)
    assert {"autograd-not-run", "replaced"} <= tamper_kinds(second.integrity_flags)
    honest = grade(GradeJob(package, package.solution), sandbox=docker_sandbox, cache=cache)
    assert honest.passed and honest.integrity_flags == ()


def test_no_exercise_code_reaches_a_learner_container(
    docker_sandbox: DockerSandbox, tmp_path: Path
) -> None:
    package = roomy("graph-inspection")
    cache = ReferenceCache(tmp_path)
    cheat = (
        "from cases import _walk\n\n"
        "def grad_fn_names(t):\n"
        "    return _walk(t, breadth_first=True)\n"
    )
    report = grade(GradeJob(package, cheat), sandbox=docker_sandbox, cache=cache)
    assert report.score == 0 and not report.passed
    honest = grade(GradeJob(package, package.solution), sandbox=docker_sandbox, cache=cache)
    assert honest.passed and honest.integrity_flags == ()

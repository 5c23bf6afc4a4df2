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


# The red team's first class (issue 29; tests/grader/test_forged_results.py has the rest):
# the runner reached through the module frame's unaudited f_back, its own send path made to
# carry typed-in values at the visible start. The second run's hidden start undoes it.
SEND_PATH_FORGERY = (
    "import sys\n\nimport torch\n\nx = torch.tensor(5.0)\n"
    "runner = sys._getframe().f_back.f_locals['self']\nhonest_send = runner.end.send\n"
    "T = {'kind': 'tensor', 'dtype': 'float32', 'shape': [], 'device': 'cpu', 'truncated': False}\n"
    "G = {**T, 'requires_grad': False, 'is_leaf': True, 'grad_fn': None, 'data': [10.0], "
    "'grad': None}\n"
    "X = {**T, 'requires_grad': True, 'is_leaf': True, 'grad_fn': None, 'data': [5.0], 'grad': G}\n"
    "Y = {**T, 'requires_grad': True, 'is_leaf': False, 'grad_fn': 'PowBackward0', "
    "'data': [25.0], 'grad': None}\n\n\n"
    "def forged_send(message):\n    if message.get('type') == 'result':\n"
    "        message['body']['variables'] = {'x': X, 'y': Y}\n    honest_send(message)\n\n\n"
    "runner.end.send = forged_send\nprint('reached', type(runner).__name__)\n"
)


def test_a_result_forged_on_the_runners_send_path_earns_no_hidden_start_point_through_docker(
    docker_zygote: DockerSandbox, tmp_path: Path
) -> None:
    """On the Docker zygote only: the harness is the same in a container per job (the
    forgery is in the harness's interpreter, not in the backend), which costs 14 s more."""
    report = grade(
        GradeJob(roomy("first-gradient"), SEND_PATH_FORGERY),
        sandbox=docker_zygote, cache=ReferenceCache(tmp_path),
    )  # fmt: skip
    assert "reached Runner" in report.stdout
    checks = {check.name: check for check in report.checks}
    assert "has the expected value" in checks["x.grad is dy/dx = 2x = 10"].message
    assert checks["y is x squared"].diagnosis == "not-from-autograd"
    assert report.score <= 4

"""Attacks submitted as learner code, graded through the full path (grader.engine.grade)
in each real sandbox backend.

Every attack must end in a clear failed result (or a zero score for faked gradients) and
leave nothing behind. The module runs backend by backend (a module-scoped backend and
reference cache: the reference runs once per backend, each attack once), and its last
test grades a correct submission after all the attacks: it must still get full marks.
"""

from __future__ import annotations

import itertools
import json
import secrets
import shutil
import socket
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sandbox_helpers import ROOT, assert_no_leftovers, job_prefix

from grader.cache import ReferenceCache
from grader.engine import DEV_SEED, GradeJob, grade, grade_with_capture
from grader.protocol import Report
from grader.runs.reference import reference_capture
from grader.runs.second import scaled_reference
from grader.sandbox.base import Sandbox
from grader.spec import Package, load_package

pytestmark = pytest.mark.sandbox

EXERCISE = ROOT / "exercises" / "first-gradient"
# A generous wall clock keeps the reference well inside its limit on a busy 2-core host
# (importing torch alone can take 15 s of wall clock there). Most CPU-bound attacks stop at
# the (default, 10 s) CPU time limit instead, but a fork bomb's processes share one CPU's
# quota and none reaches that limit: it runs the whole wall clock. So it is graded against
# the generous package's reference capture with a short wall clock of its own.
TEST_LIMITS = "\n[limits]\nwall_seconds = 30\n"
# An endless loop is stopped by the CPU limit (10 s by default): 5 s is spent sooner and
# still leaves a cold sandbox's torch imports well inside it (each process of the harness
# has the limit; with 3 s, Docker's trusted parent ran out importing torch on a busy host).
# A zygote's job imported torch before it started: 3 s of either is ample there.
SHORT_WALL_SECONDS = {"cold": 5, "zygote": 3}
SHORT_CPU_SECONDS = {"cold": 5, "zygote": 3}
# An attack on the sandbox's walls that tests/sandbox/test_bubblewrap_backend.py already
# makes on the cold bubblewrap sandbox (`run_raw`, each asserting that nothing is left
# behind; named beside each test) runs here, through the full path, on the other backends
# only: the learner's message comes from the job's status alone
# (grader.sandbox.common.classify), the same on every backend. Docker's cold containers
# have no raw attack of their own and keep every one. (Deselected at collection,
# tests/sandbox/conftest.py, so that the module still runs backend by backend.)
RAW_ATTACK_ON_COLD_BUBBLEWRAP = pytest.mark.not_on_backends("bubblewrap")


@dataclass
class Grader:
    backend: Sandbox
    package: Package
    cache: ReferenceCache
    prefix: str = field(default_factory=job_prefix)
    jobs: Iterator[int] = field(default_factory=itertools.count)

    def grade(self, code: str) -> Report:
        job_id = f"{self.prefix}-{next(self.jobs)}"
        job = GradeJob(self.package, textwrap.dedent(code), job_id=job_id)
        return grade(job, sandbox=self.backend, cache=self.cache)

    def grade_with_limits(self, code: str, **limits: int) -> Report:
        """Grades `code` under tighter `limits` (e.g. wall_seconds=5) than the package's;
        the reference and its scaled run keep the generous ones (from the cache, or run
        under the generous limits)."""
        where = {"seed": DEV_SEED, "device": "cpu", "sandbox": self.backend, "cache": self.cache}
        reference = reference_capture(self.package, **where)
        scaled = scaled_reference(self.package, reference, **where)
        lines = "".join(f"{name} = {value}\n" for name, value in limits.items())
        short = package_with_limits(f"\n[limits]\n{lines}")
        job = GradeJob(short, textwrap.dedent(code), job_id=f"{self.prefix}-{next(self.jobs)}")
        return grade_with_capture(job, sandbox=self.backend, reference=reference, scaled=scaled)[0]

    @property
    def start(self) -> str:
        """How the backend starts a job: "zygote" (forked, torch imported) or "cold"."""
        return "zygote" if getattr(self.backend, "zygote", False) else "cold"

    def assert_contained(self) -> None:
        """Nothing of any attack so far survives (processes, cgroups, containers)."""
        assert_no_leftovers(self.prefix, docker=self.backend.name == "docker")

    def assert_full_marks_for_the_solution(self) -> None:
        report = self.grade(self.package.solution)
        assert report.status == "graded" and report.passed, report.to_json()
        assert report.score == report.max_score


def package_with_limits(limits: str) -> Package:
    files = dict(load_package(EXERCISE).files)
    assert "[limits]" not in files["exercise.toml"]
    files["exercise.toml"] += limits
    return Package.from_files(files, origin=str(EXERCISE))


@pytest.fixture(scope="module")
def grader(backend: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Grader:
    cache = ReferenceCache(tmp_path_factory.mktemp("reference-cache"))
    return Grader(backend, package_with_limits(TEST_LIMITS), cache)


def assert_failed(report: Report, *words: str) -> None:
    """A clear failed result: nothing scored, and the message (or the error shown to the
    learner) says why."""
    assert not report.passed and report.score == 0, report.to_json()
    said = " ".join([report.message, json.dumps(report.exception or {})]).lower()
    assert report.message or report.exception, report.to_json()
    for word in words:
        assert word.lower() in said, (word, report.to_json())


# --- escaping the sandbox --------------------------------------------------------------


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_code_cannot_reach_a_listener_on_the_host
def test_learner_cannot_connect_to_a_port_on_the_host(grader: Grader) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        report = grader.grade(
            f"""
            import socket
            for host in ["127.0.0.1", "172.17.0.1", "10.0.2.2", "{_host_address()}"]:
                try:
                    socket.create_connection((host, {port}), timeout=1).sendall(b"leak")
                    print("connected", host)
                except OSError as error:
                    print("blocked", host, type(error).__name__)
            socket.create_connection(("127.0.0.1", {port}), timeout=1)
            """
        )
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert "connected" not in report.stdout
    assert_failed(report)
    assert report.exception and report.exception["type"] in {
        "PermissionError", "ConnectionRefusedError", "OSError", "TimeoutError",
    }  # fmt: skip
    grader.assert_contained()


def _host_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


@pytest.fixture
def host_secret() -> Iterator[tuple[Path, str]]:
    """A world-readable file on the host, in a world-readable folder of the host's /tmp."""
    token = f"host-only-{secrets.token_hex(8)}"
    folder = Path(tempfile.mkdtemp(prefix="gradlab-host-secret-"))
    folder.chmod(0o755)
    secret = folder / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o644)
    yield secret, token
    shutil.rmtree(folder)


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_code_cannot_read_files_outside_the_sandbox
def test_learner_cannot_read_files_outside_the_sandbox(
    grader: Grader, host_secret: tuple[Path, str]
) -> None:
    secret, token = host_secret
    targets = [str(secret), "/etc/shadow", str(EXERCISE / "solution.py"),
               str(ROOT / ".venv" / "pyvenv.cfg"), str(ROOT / "grader" / "engine.py")]  # fmt: skip
    report = grader.grade(
        f"""
        for path in {targets!r}:
            try:
                print(path, "->", open(path).read())
            except OSError as error:
                print(path, "->", type(error).__name__)
        open({str(secret)!r}).read()
        """
    )
    shown = json.dumps(report.to_json())
    assert token not in shown
    assert _host_text("/etc/shadow") not in shown
    assert _host_text(str(EXERCISE / "solution.py")) not in shown
    for path in targets:
        assert f"{path} -> FileNotFoundError" in report.stdout or (
            path == "/etc/shadow" and f"{path} -> PermissionError" in report.stdout
        ), report.stdout
    assert_failed(report, "FileNotFoundError")
    grader.assert_contained()


def _host_text(path: str) -> str:
    text = Path(path).read_text().strip()
    assert text
    return json.dumps(text)[1:-1]  # as it would appear inside the report's JSON


def test_learner_cannot_find_the_reference_solution_anywhere(grader: Grader) -> None:
    reference = "requires_grad=True)\ny = x**2\ny.backward()"
    assert reference in grader.package.solution
    report = grader.grade(
        f"""
        import os
        needle = {reference!r}.encode()
        paths = [os.path.join(folder, name)
                 for top in ["/tmp", "/harness", "/runtime/bin"]
                 for folder, _, names in os.walk(top) for name in names]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            paths += [f"/proc/{{pid}}/cmdline", f"/proc/{{pid}}/environ"]
            try:
                paths += [f"/proc/{{pid}}/fd/{{fd}}" for fd in os.listdir(f"/proc/{{pid}}/fd")]
            except OSError:
                pass
        found, scanned = [], 0
        for path in paths:
            if path.startswith("/proc/self") or "/fd/" in path and not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1_000_000)
            except OSError:
                continue
            scanned += 1
            if needle in data:
                found.append(path)
        print("scanned", scanned > 0, "found:", found)
        raise RuntimeError("the reference was not found")
        """
    )
    assert "scanned True found: []" in report.stdout
    assert reference not in json.dumps(report.to_json())
    assert_failed(report, "RuntimeError")
    grader.assert_contained()


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_code_sees_none_of_the_workers_environment
def test_learner_cannot_read_the_workers_environment(
    grader: Grader, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"gradlab-secret-{secrets.token_hex(8)}"
    monkeypatch.setenv("SECRET_KEY", secret)
    monkeypatch.setenv("DATABASE_URL", f"postgres://gradlab:{secret}@127.0.0.1/gradlab")
    report = grader.grade(
        """
        import os
        seen = dict(os.environ)
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    seen[pid] = open(f"/proc/{pid}/environ", "rb").read().decode()
                except OSError as error:
                    seen[pid] = type(error).__name__
        print(seen)
        raise KeyError("SECRET_KEY" if "SECRET_KEY" not in str(seen) else "leaked")
        """
    )
    assert secret not in json.dumps(report.to_json())
    assert "SECRET_KEY=" not in report.stdout and "DATABASE_URL" not in report.stdout
    assert_failed(report, "KeyError")
    grader.assert_contained()


# --- exhausting resources ---------------------------------------------------------------


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_a_fork_bomb_is_capped_and_killed_at_the_time_limit
def test_a_fork_bomb_fails_with_a_clear_message(grader: Grader) -> None:
    report = grader.grade_with_limits(
        """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """,
        wall_seconds=SHORT_WALL_SECONDS[grader.start],
    )
    assert_failed(report)
    assert report.message, report.to_json()
    grader.assert_contained()


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_allocating_2_gb_is_a_memory_failure
def test_allocating_2_gb_fails_with_the_memory_limit(grader: Grader) -> None:
    report = grader.grade(
        """
        import torch
        block = torch.ones(2 * 1024**3 // 4)
        """
    )
    assert_failed(report, "memory limit of 1024 MB exceeded")
    grader.assert_contained()


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_an_infinite_loop_is_killed_at_the_wall_clock_limit
def test_an_infinite_loop_fails_with_the_time_limit(grader: Grader) -> None:
    report = grader.grade_with_limits(
        """
        import torch
        x = torch.tensor(5.0, requires_grad=True)
        while True:
            pass
        """,
        cpu_seconds=SHORT_CPU_SECONDS[grader.start],
    )
    assert_failed(report, "time limit")
    grader.assert_contained()


def test_printing_100_mb_is_cut_at_the_output_limit_and_graded(grader: Grader) -> None:
    flood = """
        import os, sys
        chunk = "x" * (1024 * 1024)
        for _ in range(50):
            sys.stdout.write(chunk)
            os.write(1, chunk.encode())
        """
    report = grader.grade(textwrap.dedent(flood) + grader.package.solution)
    assert (report.status, report.passed) == ("graded", True), report.message
    assert report.message.startswith("your output was cut at 64 KiB")
    assert len(report.stdout) <= 2 * grader.package.manifest.limits.stdout_bytes
    grader.assert_contained()


@RAW_ATTACK_ON_COLD_BUBBLEWRAP  # raw: test_writing_a_1_gb_file_is_stopped_by_the_file_size_limit
def test_writing_a_1_gb_file_is_stopped(grader: Grader) -> None:
    report = grader.grade(
        """
        chunk = b"x" * (1024 * 1024)
        with open("/tmp/huge", "wb") as handle:
            for _ in range(1024):
                handle.write(chunk)
        """
    )
    assert_failed(report)
    said = (report.message + json.dumps(report.exception or {})).lower()
    assert "file too large" in said or "no space left" in said, report.to_json()
    grader.assert_contained()


# --- forging the result -----------------------------------------------------------------


def test_a_forged_result_frame_is_not_believed(grader: Grader) -> None:
    forged = {
        "protocol": 1, "kind": "script", "torch": "2.13.0", "device": "cpu",
        "variables": {}, "backward_calls": [], "optimizer_steps": 0, "stdout": "",
        "stdout_truncated": False, "exception": None, "duration_s": 0.0,
    }  # fmt: skip
    report = grader.grade(
        f"""
        import os, re
        body = {json.dumps(forged)!r}
        nonces = ["0" * 32]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:  # the nonce travels on the harness's stdin: try to steal it
                fd = os.open(f"/proc/{{pid}}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
                nonces += re.findall("[0-9a-f]{{32}}", os.read(fd, 1 << 20).decode(errors="ignore"))
            except OSError:
                pass
        print("stolen:", nonces[1:])
        for nonce in nonces:
            frame = f"GRADLAB-RESULT {{nonce}} {{len(body)}}\\n{{body}}".encode()
            print(frame.decode())
            os.write(1, frame)
            for target in ["/proc/1/fd/1", f"/proc/{{os.getppid()}}/fd/1"]:
                try:
                    with open(target, "wb") as out:
                        out.write(frame)
                    print("wrote to", target)
                except OSError:
                    pass
        raise RuntimeError("forgery attempted")
        """
    )
    assert "stolen: []" in report.stdout
    assert "wrote to" not in report.stdout
    assert_failed(report, "forgery attempted")
    grader.assert_contained()


# A monkeypatched torch in the learner's own process: Docker's cold start is attacked so in
# tests/docker/test_docker_integrity.py (forged captures and a replaced engine, flagged).
@pytest.mark.not_on_backends("docker")
def test_faked_gradients_from_a_monkeypatched_torch_score_zero_on_gradients(
    grader: Grader,
) -> None:
    report = grader.grade(
        """
        import torch

        def fake_backward(self, *args, **kwargs):
            x.grad = torch.tensor(10.0)

        torch.Tensor.backward = fake_backward
        torch.autograd.backward = lambda *args, **kwargs: fake_backward(None)
        x = torch.tensor(5.0)
        y = x**2
        y.backward()
        """
    )
    assert not report.passed, report.to_json()
    gradient = next(c for c in report.checks if c.name.startswith("x.grad"))
    assert not gradient.passed and gradient.score == 0, gradient
    calls = next(c for c in report.checks if c.name == "exactly one backward call")
    assert not calls.passed and calls.score == 0, calls
    grader.assert_contained()


def test_exiting_early_with_os_exit_0_is_a_failed_run(grader: Grader) -> None:
    report = grader.grade(
        """
        import os
        import torch
        x = torch.tensor(5.0, requires_grad=True)
        y = x**2
        y.backward()
        os._exit(0)
        """
    )
    assert_failed(report, "stopped without producing a result")
    grader.assert_contained()


def test_killing_the_harness_never_forges_a_pass(grader: Grader) -> None:
    report = grader.grade(
        """
        import os, signal
        for pid in range(1, 64):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        import torch
        x = torch.tensor(5.0, requires_grad=True)
        y = -x**2
        y.backward()
        """
    )
    assert not report.passed and report.score < report.max_score, report.to_json()
    if report.status == "failed":  # the harness died: say so
        assert "stopped without producing a result" in report.message
    else:  # the harness survived (e.g. as pid 1): the wrong gradient is graded as such
        assert any(c.diagnosis == "sign-error" for c in report.checks), report.to_json()
    grader.assert_contained()


# --- after every attack (keep last: the module runs backend by backend, in file order) ---


def test_a_correct_submission_after_all_the_attacks_gets_full_marks(grader: Grader) -> None:
    grader.assert_contained()
    grader.assert_full_marks_for_the_solution()

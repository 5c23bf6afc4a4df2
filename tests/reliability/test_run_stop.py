"""`make run` (scripts/run.sh) stops everything it started, every time: started on a
private port with SQLite and the test Redis database, then stopped by Ctrl-C (SIGINT to
its foreground process group), and started again on the same database and var directory
with SIGINT ignored (as whatever a non-interactive shell starts in the background is: a
test suite or CI job started with `&`; a shell cannot trap a signal ignored on entry) and
stopped by Ctrl-C again. Its scheduler is supervised: a killed `celery beat` is started
again, and SIGTERM then stops everything. After each stop no process of it remains (found
by a marker in the environment every child inherits, and by the process groups it
reported) and its port is free."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from gradlab_fixtures import ROOT, wait_for

pytestmark = [pytest.mark.worker]

START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 60.0
GROUP_LINE = re.compile(r"started (\w+) \(process group (\d+)\)")
MARKER = "GRADLAB_RUN_TEST_MARKER"
SIGNAL_FIELDS = ("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
SIGINT_OPTIONS = {"default": "default", "ignored": "ignore"}  # GNU env: --<option>-signal=INT


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _processes_with(marker: str) -> list[int]:
    """Pids of live processes whose environment carries `marker` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def _in_sessions(sessions: set[int]) -> list[int]:
    """Pids of live processes in one of `sessions` (each service runs under setsid)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) in sessions:
            found.append(int(entry.name))
    return found


class RunScript:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.port = _free_port()
        self.marker = f"{MARKER}={secrets.token_hex(8)}"
        self.round = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tmp_path / "run-0.log"

    def start(self, *, sigint: str = "default") -> None:
        """`sigint`: how run.sh finds SIGINT when it starts, "default" (a terminal's
        foreground job) or "ignored" (a non-interactive shell's background job), whatever
        this test process was given."""
        self.round += 1
        self.log = self.tmp_path / f"run-{self.round}.log"
        queue = f"grading-stop-{os.getpid()}-{self.port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}  # fmt: skip
        env.update(
            PORT=str(self.port),
            DATABASE_URL=f"sqlite:///{self.tmp_path / 'gradlab.sqlite3'}",
            REDIS_URL=settings.CELERY_BROKER_URL,
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
            GRADLAB_VAR_DIR=str(self.tmp_path / "var"),
            GRADLAB_QUEUE_CPU=queue,
            GRADLAB_QUEUE_GPU=f"{queue}-gpu",
            GRADLAB_QUEUE_AUTHORING=f"{queue}-authoring",
            GRADLAB_SANDBOX_WARM="0",
            WEB_WORKERS="2",
            # one pool process (and its zygote): nothing is graded, the process tree is
            # what the tests stop and count
            WORKER_CONCURRENCY="1",
        )
        name, value = self.marker.split("=")
        env[name] = value
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["env", f"--{SIGINT_OPTIONS[sigint]}-signal=INT", "bash", "scripts/run.sh"],
                cwd=ROOT, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_for(lambda: "gradlab is running" in self.output() or self.process.poll() is not None,
                 timeout=START_TIMEOUT_S, what="run.sh to come up")  # fmt: skip
        assert self.process.poll() is None, self.output()

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def groups(self) -> dict[str, int]:
        return {name: int(pgid) for name, pgid in GROUP_LINE.findall(self.output())}

    def kill_everything(self) -> None:
        for pid in _processes_with(self.marker) + _in_sessions(set(self.groups().values())):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def run_script(tmp_path: Path) -> Iterator[RunScript]:
    script = RunScript(tmp_path)
    yield script
    script.kill_everything()


def _stop(script: RunScript, how: signal.Signals) -> None:
    assert script.process is not None
    if how == signal.SIGINT:  # Ctrl-C: the terminal signals the foreground process group
        os.killpg(script.process.pid, signal.SIGINT)
    else:
        script.process.send_signal(how)
    try:
        script.process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"run.sh ignored {how.name} for {STOP_TIMEOUT_S:.0f} s: "
                    f"{_signal_state(script.process.pid)}\n{script.output()[-3000:]}")  # fmt: skip


def _signal_state(pid: int) -> str:
    """What a stuck shell was doing: its state, its pending, blocked, ignored and caught
    signals, the kernel function it sleeps in, and its children."""
    proc = Path(f"/proc/{pid}")
    try:
        lines = (proc / "status").read_text().splitlines()
        status = [line for line in lines if line.startswith(SIGNAL_FIELDS)]
        wchan = (proc / "wchan").read_text()
        children = (proc / "task" / str(pid) / "children").read_text().split()
    except OSError as error:
        return f"no state of pid {pid}: {error}"
    commands = []
    for child in children:
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            commands.append(b" ".join(argv).decode(errors="replace"))
    return f"{'; '.join(status)}; wchan={wchan}; children={commands}"


def _assert_stopped_in_full(script: RunScript, groups: dict[str, int], name: str) -> None:
    assert "run: stopped" in script.output()
    assert _processes_with(script.marker) == [], f"{name}: left running"
    assert _in_sessions(set(groups.values())) == [], f"{name}: left running"
    assert _port_is_free(script.port), f"{name}: port {script.port} still bound"


def test_run_script_leaves_no_process_and_frees_its_port_on_ctrl_c_each_time(
    run_script: RunScript,
) -> None:
    """SIGTERM stops it in test_a_killed_scheduler_is_started_again_by_run_script (after a
    restart of its scheduler) and in tests/platform/test_run_script.py."""
    for sigint in ("default", "ignored"):
        run_script.start(sigint=sigint)
        groups = run_script.groups()
        assert set(groups) >= {"worker", "beat", "web", "watchdog"}, run_script.output()
        assert _processes_with(run_script.marker)

        _stop(run_script, signal.SIGINT)

        _assert_stopped_in_full(run_script, groups, f"Ctrl-C (SIGINT {sigint} at start)")


def _beat_pids(script: RunScript) -> list[int]:
    """The `celery beat` process (not its supervising shell)."""
    found = []
    for pid in _in_sessions({script.groups()["beat"]}):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"bash" not in argv[0] and b"beat" in argv:
                found.append(pid)
    return found


def test_a_killed_scheduler_is_started_again_by_run_script(run_script: RunScript) -> None:
    run_script.start()
    (first,) = wait_for(lambda: _beat_pids(run_script), what="celery beat")

    os.kill(first, signal.SIGKILL)

    second = wait_for(lambda: [pid for pid in _beat_pids(run_script) if pid != first],
                      what="celery beat started again")  # fmt: skip
    assert second and "run: beat exited (137): restarting" in run_script.output()
    groups = run_script.groups()
    _stop(run_script, signal.SIGTERM)
    _assert_stopped_in_full(run_script, groups, "SIGTERM after a restart of its scheduler")

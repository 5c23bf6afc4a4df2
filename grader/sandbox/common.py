"""What every sandbox backend shares: the harness command, the environment the harness
sees, the constants of a run that grader.protocol.Limits does not carry, and how the way a
run ended becomes a RunStatus and a message."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from grader.protocol import FRAME_OVERHEAD_BYTES, Limits, RunStatus

MIB = 1024 * 1024

# Inside every sandbox: neutral paths, never the worker's.
SANDBOX_HOSTNAME = "gradlab-sandbox"
SANDBOX_WORKDIR = "/tmp"
HARNESS_MOUNT = "/harness"
HARNESS_MAIN = f"{HARNESS_MOUNT}/main.py"
HARNESS_COMMAND = ("python", "-I", "-B", HARNESS_MAIN)
SANDBOX_USER_NAME = "learner"  # USER/LOGNAME, for getpass.getuser() without a passwd file
SANDBOX_THREADS = "1"  # one BLAS/OpenMP thread: a job gets one CPU's worth of time

# How a run is capped beyond grader.protocol.Limits (implementation details, not limits an
# exercise may change).
STDERR_CAP_BYTES = 65_536  # kept for the worker's log only; never shown to a learner
CPU_HARD_GRACE_S = 1  # SIGXCPU at the soft RLIMIT_CPU, SIGKILL this much later
# Limits of the fallback without cgroups.
RLIMIT_ADDRESS_SPACE_HEADROOM_MB = 1024  # torch maps more than it touches


def stdout_cap(limits: Limits) -> int:
    """The most stdout a backend keeps: the capture plus its result frame's header."""
    return limits.result_bytes + FRAME_OVERHEAD_BYTES


def process_count(uid: int) -> int:
    """How many processes `uid` runs on the host (RLIMIT_NPROC counts every one of them)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count


def harness_env(device: str, *, workdir: str = SANDBOX_WORKDIR) -> dict[str, str]:
    """Everything the harness sees beyond PATH/LANG: never anything of the worker's."""
    return {
        "HOME": workdir,
        "TMPDIR": workdir,
        "USER": SANDBOX_USER_NAME,
        "LOGNAME": SANDBOX_USER_NAME,
        "OMP_NUM_THREADS": SANDBOX_THREADS,
        "MKL_NUM_THREADS": SANDBOX_THREADS,
        "OPENBLAS_NUM_THREADS": SANDBOX_THREADS,
        "PYTHONDONTWRITEBYTECODE": "1",
        "GRADLAB_DEVICE": device,
    }


@dataclass(frozen=True)
class Ending:
    """How one sandboxed run ended, as any backend observes it."""

    exit_code: int | None  # shell encoding: 128 + N for a death by signal N (or -N)
    timed_out: bool = False
    stdout_exceeded: bool = False
    oom_killed: bool = False

    @property
    def killed(self) -> bool:
        """The backend killed the run itself: its exit status says nothing."""
        return self.timed_out or self.stdout_exceeded


def classify(ending: Ending, limits: Limits) -> tuple[RunStatus, str]:
    """The run's status and the message a learner may read."""
    if ending.stdout_exceeded:
        return RunStatus.OUTPUT_LIMIT, f"output limit of {limits.result_bytes} bytes exceeded"
    if ending.timed_out:
        return RunStatus.TIMEOUT, f"time limit of {limits.wall_seconds:g} s exceeded"
    if ending.oom_killed:
        return RunStatus.MEMORY, f"memory limit of {limits.memory_mb} MB exceeded"
    code = ending.exit_code
    sig = signal_of(code) if code is not None else None
    if sig == signal.SIGXCPU:
        return RunStatus.TIMEOUT, f"CPU time limit of {limits.cpu_seconds} s exceeded"
    if code == 0:
        return RunStatus.OK, ""
    if sig is not None:
        return RunStatus.CRASHED, f"the sandboxed program was killed by {sig.name}"
    return RunStatus.CRASHED, f"the sandboxed program exited with status {code}"


def signal_of(code: int) -> signal.Signals | None:
    """The signal an exit status reports: -N (Popen) or 128 + N (a shell, bwrap, Docker)."""
    number = -code if code < 0 else code - 128 if code > 128 else None
    if number is None:
        return None
    with contextlib.suppress(ValueError):
        return signal.Signals(number)
    return None


# -- the spawning thread -------------------------------------------------------------------

T = TypeVar("T")
_spawner: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_spawner_lock = threading.Lock()


def in_spawning_thread(start: Callable[[], T]) -> T:
    """Runs `start` (which starts a sandbox process) in the one thread per process that
    lives as long as the process. bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when
    the *thread* that started it ends: a warm spare or a zygote started by a short-lived
    thread (a validation pool's, a worker's start-up thread) would be SIGKILLed with it,
    while a later job is handed that sandbox."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():  # none yet, or forked since
            _spawner = (os.getpid(), concurrent.futures.ThreadPoolExecutor(1, "gradlab-spawn"))
        spawner = _spawner[1]
    return spawner.submit(start).result()

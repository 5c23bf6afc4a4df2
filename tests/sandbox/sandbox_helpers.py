"""Helpers shared by the sandbox tests: raw jobs and leftover-process checks."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from grader.protocol import SandboxResult

ROOT = Path(__file__).resolve().parents[2]
RAW_HARNESS = Path(__file__).resolve().parent / "raw_harness"
LEFTOVER_GRACE_S = 5.0
DOCKER_INFO_TIMEOUT_S = 90  # a busy 2-core host can be slow to answer
REQUIRE_DOCKER_ENV = "GRADLAB_REQUIRE_DOCKER"
# grader.sandbox.docker's labels
DOCKER_ROLE_LABEL = "org.gradlab.role=sandbox-job"
DOCKER_JOB_LABEL = "org.gradlab.job"
DOCKER_WORKER_LABEL = "org.gradlab.worker"  # on a zygote container: host:pid of its worker

RawRun = Callable[..., SandboxResult]


# Forks until the pids limit refuses a fork and prints how many it made (each child sleeps
# until the sandbox ends).
FORK_UNTIL_REFUSED = """
import os, time
made = 0
for _ in range(10_000):
    try:
        if os.fork() == 0:
            time.sleep(1000)
        made += 1
    except OSError:
        break
print(made, flush=True)
"""


# A zygote shared across jobs, as a deployment that chooses throughput runs it
# (GRADLAB_ZYGOTE_JOBS): for the fixtures that run many jobs on one zygote for other
# purposes than each job's fresh hash secret and address layout (the product default, one
# job per zygote generation, would start a torch-importing zygote per job).
SHARED_ZYGOTE_JOBS = 500


def raw_job(code: str, nonce: str | None = None) -> bytes:
    """stdin for tests/sandbox/raw_harness: the envelope line, then the nonce line."""
    return f"{json.dumps({'python': code})}\n{nonce or secrets.token_hex(16)}\n".encode()


# --- leftovers ------------------------------------------------------------------------


def gradlab_cgroups() -> set[Path]:
    """Every per-job cgroup folder of ours that exists now (groups of other processes
    come and go meanwhile: a folder removed while it is read is skipped)."""
    roots = [
        Path("/sys/fs/cgroup/pids/gradlab"),
        Path("/sys/fs/cgroup/cpu/gradlab"),
        *_folders_named("gradlab", Path("/sys/fs/cgroup/memory")),
        *Path("/sys/fs/cgroup").glob("gradlab"),
    ]
    found = set()
    for root in roots:
        with contextlib.suppress(OSError):
            found |= {child for child in root.iterdir() if child.is_dir()}
    return found


def _folders_named(name: str, top: Path) -> list[Path]:
    found = []
    for folder, subfolders, _ in os.walk(top):  # os.walk skips what it cannot read
        if name in subfolders:
            found.append(Path(folder) / name)
            subfolders.remove(name)
    return found


def job_prefix() -> str:
    """A job-id prefix unique to one test: every job it runs is named `<prefix>-<n>`."""
    return f"test-{secrets.token_hex(6)}"


def job_leftovers(prefix: str, *, docker: bool = False) -> list[str]:
    """What still exists of the jobs named `prefix...`: their cgroups (the bubblewrap
    backend names them after the job id; a process cannot leave its cgroup unprivileged,
    and a cgroup can only be removed once empty), any live process in them, and Docker
    containers labelled with such a job (when `docker`). Zombies (dead, awaiting the host
    init) don't count."""
    found = [f"cgroup {c}" for c in gradlab_cgroups() if c.name.startswith(prefix)]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if f"/{prefix}" not in (entry / "cgroup").read_text():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(f"process {entry.name} ({state}) {command.decode(errors='replace')}")
    if docker:
        found += [f"container of job {job}" for job in docker_jobs() if job.startswith(prefix)]
    return found


def docker_jobs() -> list[str]:
    """The job ids of Docker sandbox containers (running or not), when Docker is here."""
    if shutil.which("docker") is None:
        return []
    try:
        listed = subprocess.run(
            ["docker", "ps", "-a", "--filter", f"label={DOCKER_ROLE_LABEL}",
             "--format", f'{{{{.Label "{DOCKER_JOB_LABEL}"}}}}'],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    return listed.stdout.split() if listed.returncode == 0 else []


def assert_no_leftovers(prefix: str, *, docker: bool = False) -> None:
    """Nothing of the jobs named `prefix...` survives them (a short grace period lets an
    asynchronous backend finish removing a container; `docker`: look for containers too)."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (left := job_leftovers(prefix, docker=docker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"left behind by jobs {prefix}-*: {left}"


def our_zygotes(*, docker: bool = False) -> set[str]:
    """This test process's zygotes that exist now: the processes in its zygote cgroups
    (bubblewrap: cgroups.job_name("zygote") names them after this process) and those
    cgroups, and (`docker`) the zygote containers labelled with this process, running or
    not."""
    name = f"zygote-{os.getpid()}-"
    found = {f"cgroup {c}" for c in gradlab_cgroups() if c.name.startswith(name)}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or f"/{name}" not in (entry / "cgroup").read_text():
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.add(f"process {entry.name}")
        except (OSError, IndexError):
            continue
    if docker and shutil.which("docker") is not None:
        worker = f"{DOCKER_WORKER_LABEL}={socket.gethostname()}:{os.getpid()}"
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            listed = subprocess.run(
                ["docker", "ps", "-a", "-q", "--filter", f"label={worker}"],
                capture_output=True, text=True, timeout=20,
            )  # fmt: skip
            found |= {f"container {c}" for c in listed.stdout.split()}
    return found


def assert_no_zygotes_but(kept: set[str], *, docker: bool = False) -> None:
    """No zygote of this test process exists but those in `kept` (a short grace period,
    as for a job's leftovers)."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (left := our_zygotes(docker=docker) - kept) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"zygotes left behind: {left}"


@functools.cache
def docker_unavailable_reason() -> str | None:
    """Why the Docker backend cannot run here, or None when it can (asked once)."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        info = subprocess.run(
            ["docker", "info"], capture_output=True, timeout=DOCKER_INFO_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"docker info failed: {error}"
    if info.returncode != 0:
        return f"Docker Engine is not running: {info.stderr.decode(errors='replace')[:200]}"
    try:
        import grader.sandbox.docker  # noqa: F401
    except ImportError as error:
        return f"grader.sandbox.docker cannot be imported: {error}"
    return None

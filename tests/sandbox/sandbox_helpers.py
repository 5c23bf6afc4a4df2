"""Helpers shared by the sandbox tests: raw jobs and leftover-process checks."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.protocol import SandboxResult

ROOT = Path(__file__).resolve().parents[2]
RAW_HARNESS = Path(__file__).resolve().parent / "raw_harness"
LEFTOVER_GRACE_S = 5.0
REQUIRE_DOCKER_ENV = "GRADLAB_REQUIRE_DOCKER"
DOCKER_JOB_LABEL = "org.gradlab.role=sandbox-job"  # grader.sandbox.docker's job label

RawRun = Callable[..., SandboxResult]


def raw_job(code: str, nonce: str | None = None) -> bytes:
    """stdin for tests/sandbox/raw_harness: the envelope line, then the nonce line."""
    return f"{json.dumps({'python': code})}\n{nonce or secrets.token_hex(16)}\n".encode()


# --- leftovers ------------------------------------------------------------------------


def sandbox_user_processes() -> set[tuple[int, int]]:
    """(pid, start time) of every process owned by the bubblewrap sandbox's host user."""
    if os.geteuid() != 0:  # bwrap runs as the worker itself: nothing to tell apart
        return set()
    try:
        uid = pwd.getpwnam(os.environ.get("GRADLAB_SANDBOX_USER", "gradlab-sandbox")).pw_uid
    except KeyError:
        return set()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                start = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[19])
                found.add((int(entry.name), start))
        except (OSError, ValueError, IndexError):
            continue
    return found


def gradlab_cgroups() -> set[Path]:
    """Every per-job cgroup folder of ours that exists now."""
    roots = [
        Path("/sys/fs/cgroup/pids/gradlab"),
        *Path("/sys/fs/cgroup/memory").glob("**/gradlab"),
        *Path("/sys/fs/cgroup").glob("gradlab"),
    ]
    return {child for root in roots if root.is_dir() for child in root.iterdir() if child.is_dir()}


@dataclass(frozen=True)
class Snapshot:
    """What belongs to sandboxes right now (other sessions' jobs may be running)."""

    processes: frozenset[tuple[int, int]]
    cgroups: frozenset[Path]
    containers: frozenset[str]


def snapshot() -> Snapshot:
    return Snapshot(
        frozenset(sandbox_user_processes()), frozenset(gradlab_cgroups()), frozenset(containers())
    )


def containers() -> set[str]:
    """Docker containers of sandbox jobs (running or not), when Docker is here."""
    if shutil.which("docker") is None:
        return set()
    try:
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label={DOCKER_JOB_LABEL}"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return set()
    return set(listed.stdout.split()) if listed.returncode == 0 else set()


def assert_no_leftovers(before: Snapshot) -> None:
    """Nothing of a sandbox that was not there before survives: no process of the sandbox
    user, no job cgroup, no job container. Other sessions' short jobs may come and go
    meanwhile, hence the grace period: what is left is what stays."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while True:
        now = snapshot()
        extra = (
            now.processes - before.processes,
            now.cgroups - before.cgroups,
            now.containers - before.containers,
        )
        if not any(extra) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    processes, cgroups, jobs = extra
    assert not processes, f"sandbox processes left behind: {sorted(processes)}"
    assert not cgroups, f"job cgroups left behind: {sorted(cgroups)}"
    assert not jobs, f"job containers left behind: {sorted(jobs)}"


def docker_unavailable_reason() -> str | None:
    """Why the Docker backend cannot run here, or None when it can."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as error:
        return f"docker info failed: {error}"
    if info.returncode != 0:
        return f"Docker Engine is not running: {info.stderr.decode(errors='replace')[:200]}"
    try:
        import grader.sandbox.docker  # noqa: F401
    except ImportError as error:
        return f"grader.sandbox.docker cannot be imported: {error}"
    return None

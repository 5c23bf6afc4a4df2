"""Who holds a job's claim: the host (hostname and boot id), the process id and the
process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot).

A claim whose owner is on this host and whose process is gone (no such pid, a zombie, or
a pid reused by a process that started at another time) is provably dead: a redelivery or
the sweep may take it over at once. An owner on another host cannot be checked from here:
its lease is the last resort.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
BOOT_ID = PROC / "sys" / "kernel" / "random" / "boot_id"
DEAD_STATES = frozenset({"Z", "X", "x"})  # zombie, dead
STARTTIME_FIELD = 19  # field 22 of /proc/<pid>/stat, counted after the ") " of its name


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    started: int

    def __str__(self) -> str:
        return f"{self.host}/{self.pid}/{self.started}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        host, _, rest = text.rpartition("/")
        host, _, pid = host.rpartition("/")
        if not host or not pid.isdigit() or not rest.isdigit():
            return None
        return cls(host=host, pid=int(pid), started=int(rest))


@functools.cache
def this_host() -> str:
    """The hostname and the boot id: a host that rebooted is another host (its pids start
    over), and so is another container (its own hostname and pid namespace)."""
    try:
        boot = BOOT_ID.read_text(encoding="ascii").strip()[:8]
    except OSError:
        boot = "noboot"
    return f"{socket.gethostname()}#{boot}"


def process_start(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a live pid, or None when there is no such process."""
    try:
        stat = (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[STARTTIME_FIELD])
    except (IndexError, ValueError):
        return None


def current() -> Owner:
    """The calling process as an owner (read again at each call: pool children fork)."""
    pid = os.getpid()
    found = process_start(pid)
    return Owner(host=this_host(), pid=pid, started=found[1] if found else 0)


def is_gone(owner_text: str) -> bool:
    """True only when the owner is provably dead: on this host, and its process is gone."""
    owner = Owner.parse(owner_text)
    if owner is None or owner.host != this_host():
        return False
    found = process_start(owner.pid)
    return found is None or found[0] in DEAD_STATES or found[1] != owner.started

"""Per-job control groups: the memory (swap included), process and CPU limits of one
sandbox run, its out-of-memory counter, and a way to kill everything that runs in it.

Supports cgroup v1 (separate `memory`, `pids` and `cpu` hierarchies, as on this project's
hosts) and cgroup v2 (one unified hierarchy). The job's group is created below the
worker's own group (so the worker's limits still bound it), in a `gradlab` subfolder, or
below the `parent` the caller names (GRADLAB_CGROUP_PARENT in the settings). When neither
works, `open_job_cgroup` raises `CgroupUnavailable` with the reason and the caller falls
back to rlimits. The CPU quota (CFS bandwidth: `quota` microseconds of CPU per `period`)
is set wherever the cpu controller is available; without it the job runs unthrottled.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

GROUP_FOLDER = "gradlab"
CPU_PERIOD_US = 100_000
V1_CONTROLLERS = ("memory", "pids", "cpu")  # memory and pids required, cpu when mounted
V1_DEFAULT_SHARES, V2_DEFAULT_WEIGHT = 1024, 100  # one task's weight at nice 0
KILL_ROUNDS = 200
KILL_PAUSE_S = 0.005
# A SIGKILLed torch process can take seconds to release its memory on a busy host: rmdir
# is EBUSY until then. Retry for up to 10 s; it usually succeeds at the first try.
REMOVE_ROUNDS = 500
REMOVE_PAUSE_S = 0.02
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class CgroupUnavailable(Exception):
    """No per-job cgroup can be made here; the message says why."""


class JobCgroup(Protocol):
    """One job's control group(s)."""

    @property
    def version(self) -> str: ...

    def join_files(self) -> tuple[Path, ...]:
        """The `cgroup.procs` files a process writes its own pid into to join the job."""
        ...

    def pids(self) -> set[int]: ...

    def oom_killed(self) -> bool:
        """True when the kernel killed a process of this job for exceeding its memory."""
        ...

    def cpu_quota(self) -> tuple[int, int] | None:
        """(quota, period) in microseconds as the kernel holds them (quota -1: none), or
        None where no cpu controller is available."""
        ...

    def kill_all(self) -> bool:
        """SIGKILL every process in the job until none is left; False if some survive."""
        ...

    def remove(self) -> None: ...

    def renamed(self, name: str) -> JobCgroup:
        """The same group(s) under the folder name `name` (an empty group's limits and
        processes go with it). Raises OSError where the kernel cannot (cgroup v2)."""
        ...


@dataclass(frozen=True)
class Mount:
    version: str  # "v1" | "v2"
    controllers: frozenset[str]
    root: str  # the hierarchy path that is mounted there
    mountpoint: Path


def job_name(job_id: str) -> str:
    """A unique, filesystem-safe folder name for one run of `job_id`."""
    safe = _NAME_UNSAFE.sub("-", job_id)[:40].strip("-.") or "job"
    return f"{safe}-{os.getpid()}-{os.urandom(4).hex()}"


@dataclass(frozen=True)
class JobLimits:
    """What one job's group enforces."""

    memory_bytes: int
    pids: int
    cpus: float  # CPU quota in CPUs (1.0: one CPU's worth of time per period)

    @property
    def cpu_quota_us(self) -> int:
        return max(int(self.cpus * CPU_PERIOD_US), 1000)


def open_job_cgroup(name: str, limits: JobLimits, *, parent: str | None = None) -> JobCgroup:
    """Create the job's group(s) with their limits set, below `parent` (a path in the
    hierarchy) when given. Raises CgroupUnavailable."""
    mounts = list(_cgroup_mounts())
    v1 = {c: m for m in mounts if m.version == "v1" for c in m.controllers}
    if "memory" in v1 and "pids" in v1:
        return _V1Group.create(name, v1, limits, parent)
    unified = [m for m in mounts if m.version == "v2"]
    if unified:
        return _V2Group.create(name, unified[0], limits, parent)
    raise CgroupUnavailable("no cgroup v1 memory+pids hierarchy nor cgroup v2 is mounted")


def reap_stale(*, parent: str | None = None) -> list[Path]:
    """Kill and remove job groups whose worker is gone (killed mid-job): the folder name
    carries the worker's pid (see job_name). Returns what was removed."""
    removed = []
    for base in _job_bases(parent):
        for folder in sorted(base.iterdir()) if base.is_dir() else ():
            if folder.is_dir() and not _worker_alive(folder.name):
                _kill_until_empty([folder / "cgroup.procs"])
                with contextlib.suppress(OSError):
                    _rmdir_retrying(folder)
                    removed.append(folder)
    return removed


def _job_bases(parent: str | None) -> list[Path]:
    mounts = list(_cgroup_mounts())
    v1 = {c: m for m in mounts if m.version == "v1" for c in m.controllers}
    if "memory" in v1 and "pids" in v1:
        return [_base_dir(v1[c], c, parent) for c in V1_CONTROLLERS if c in v1]
    return [_base_dir(m, None, parent) for m in mounts if m.version == "v2"][:1]


def _worker_alive(name: str) -> bool:
    parts = name.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return True  # not one of ours: leave it alone
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- discovery -------------------------------------------------------------------------


def _cgroup_mounts() -> Iterator[Mount]:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(fields) < 5 or len(extra) < 3:
                continue
            fstype, options = extra[0], set(extra[2].split(","))
            if fstype == "cgroup":
                controllers = frozenset(options & set(V1_CONTROLLERS))
                if controllers:
                    yield Mount("v1", controllers, fields[3], Path(_unescape(fields[4])))
            elif fstype == "cgroup2":
                yield Mount("v2", frozenset(), fields[3], Path(_unescape(fields[4])))


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _own_path(controller: str | None) -> str:
    """This process's group path in the hierarchy of `controller` (None: the v2 one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",") if controllers else []
        if (controller is None and not names) or (controller in names):
            return path
    return "/"


def _base_dir(mount: Mount, controller: str | None, parent: str | None) -> Path:
    """Where the job groups go: below `parent`, else below our own group."""
    if parent:
        return Path(parent) if mount.version == "v2" else mount.mountpoint / parent.lstrip("/")
    own = _own_path(controller)
    relative = os.path.relpath(own, mount.root) if own.startswith(mount.root) else "."
    own_dir = (mount.mountpoint / relative).resolve()
    return (own_dir if own_dir.is_dir() else mount.mountpoint) / GROUP_FOLDER


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _read_pids(path: Path) -> set[int]:
    try:
        return {int(p) for p in path.read_text().split()}
    except (OSError, ValueError):
        return set()


def _kill_until_empty(procs_files: Iterable[Path]) -> bool:
    files = tuple(procs_files)
    for _ in range(KILL_ROUNDS):
        alive = set().union(*(_read_pids(f) for f in files))
        if not alive:
            return True
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(KILL_PAUSE_S)
    return not set().union(*(_read_pids(f) for f in files))


def _rmdir_retrying(path: Path) -> None:
    for _ in range(REMOVE_ROUNDS):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the last exiting tasks are released
            time.sleep(REMOVE_PAUSE_S)
    path.rmdir()


# --- cgroup v1 -------------------------------------------------------------------------


@dataclass(frozen=True)
class _V1Group:
    """One folder per controller hierarchy: memory, pids and (when mounted) cpu."""

    folders: dict[str, Path]
    version: str = "v1"

    @classmethod
    def create(
        cls, name: str, mounts: dict[str, Mount], limits: JobLimits, parent: str | None
    ) -> _V1Group:
        folders = {c: _base_dir(mounts[c], c, parent) / name for c in V1_CONTROLLERS if c in mounts}
        group = cls({})
        try:
            for controller, folder in folders.items():
                folder.mkdir(parents=True)
                group.folders[controller] = folder
                if controller == "cpu":
                    _weigh_base(folder.parent / "cpu.shares", V1_DEFAULT_SHARES)
        except OSError as error:
            group.remove()
            raise CgroupUnavailable(f"cannot create {folder}: {error}") from error
        try:
            group._set(limits)
        except OSError as error:
            group.remove()
            raise CgroupUnavailable(f"cannot set limits in {folders['memory']}: {error}") from error
        return group

    def _set(self, limits: JobLimits) -> None:
        memory = self.folders["memory"]
        _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        swap = memory / "memory.memsw.limit_in_bytes"
        if swap.exists():  # memory + swap == memory: no swap at all
            _write(swap, str(limits.memory_bytes))
        else:
            _write(memory / "memory.swappiness", "0")
        _write(self.folders["pids"] / "pids.max", str(limits.pids))
        cpu = self.folders.get("cpu")
        if cpu is not None:
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(limits.cpu_quota_us))

    def join_files(self) -> tuple[Path, ...]:
        return tuple(folder / "cgroup.procs" for folder in self.folders.values())

    def pids(self) -> set[int]:
        return set().union(*(_read_pids(f) for f in self.join_files()))

    def oom_killed(self) -> bool:
        return _counter(self.folders["memory"] / "memory.oom_control", "oom_kill") > 0

    def cpu_quota(self) -> tuple[int, int] | None:
        cpu = self.folders.get("cpu")
        if cpu is None:
            return None
        quota = int((cpu / "cpu.cfs_quota_us").read_text())
        return quota, int((cpu / "cpu.cfs_period_us").read_text())

    def kill_all(self) -> bool:
        return _kill_until_empty(self.join_files())

    def remove(self) -> None:
        self.kill_all()
        failures = []
        for folder in self.folders.values():  # every controller's folder, even after a failure
            try:
                _rmdir_retrying(folder)
            except OSError as error:
                failures.append(error)
        if failures:
            raise failures[0]

    def renamed(self, name: str) -> _V1Group:
        done: dict[str, Path] = {}
        try:
            for controller, folder in self.folders.items():
                done[controller] = folder.rename(folder.with_name(name))
        except OSError:
            for controller, folder in done.items():  # back as it was: one name for all
                with contextlib.suppress(OSError):
                    folder.rename(self.folders[controller])
            raise
        return _V1Group(done)


# --- cgroup v2 -------------------------------------------------------------------------


@dataclass(frozen=True)
class _V2Group:
    folder: Path
    version: str = "v2"

    @classmethod
    def create(cls, name: str, mount: Mount, limits: JobLimits, parent: str | None) -> _V2Group:
        base = _base_dir(mount, None, parent)
        try:
            base.mkdir(exist_ok=True)
            _enable_controllers(base.parent if base.name == GROUP_FOLDER else base)
            _enable_controllers(base)
            _weigh_base(base / "cpu.weight", V2_DEFAULT_WEIGHT)
            (base / name).mkdir()
        except OSError as error:
            raise CgroupUnavailable(
                f"cgroup v2: cannot delegate memory and pids below {base} ({error}); "
                "set GRADLAB_CGROUP_PARENT to a delegated, process-free group"
            ) from error
        group = cls(base / name)
        try:
            _write(group.folder / "memory.max", str(limits.memory_bytes))
            if (group.folder / "memory.swap.max").exists():
                _write(group.folder / "memory.swap.max", "0")
            _write(group.folder / "pids.max", str(limits.pids))
            if (group.folder / "cpu.max").exists():
                _write(group.folder / "cpu.max", f"{limits.cpu_quota_us} {CPU_PERIOD_US}")
        except OSError as error:
            group.remove()
            raise CgroupUnavailable(f"cannot set limits in {group.folder}: {error}") from error
        return group

    def join_files(self) -> tuple[Path, ...]:
        return (self.folder / "cgroup.procs",)

    def pids(self) -> set[int]:
        return _read_pids(self.folder / "cgroup.procs")

    def oom_killed(self) -> bool:
        return _counter(self.folder / "memory.events", "oom_kill") > 0

    def cpu_quota(self) -> tuple[int, int] | None:
        try:
            quota, period = (self.folder / "cpu.max").read_text().split()
        except FileNotFoundError:
            return None
        return (-1 if quota == "max" else int(quota)), int(period)

    def kill_all(self) -> bool:
        kill = self.folder / "cgroup.kill"
        if kill.exists():
            with contextlib.suppress(OSError):
                _write(kill, "1")
        return _kill_until_empty(self.join_files())

    def remove(self) -> None:
        self.kill_all()
        _rmdir_retrying(self.folder)

    def renamed(self, name: str) -> _V2Group:
        return _V2Group(self.folder.rename(self.folder.with_name(name)))


def _weigh_base(weight_file: Path, one_task: int) -> None:
    """Give the folder holding the job groups the weight of one task per CPU: under the
    scheduler, all the jobs inside it together compete like that many processes (as
    they did outside any cpu group), not like a single one."""
    wanted = one_task * (os.cpu_count() or 1)
    with contextlib.suppress(OSError, ValueError):
        if int(weight_file.read_text()) < wanted:
            _write(weight_file, str(wanted))


def _enable_controllers(folder: Path) -> None:
    """Delegate memory and pids (required) and cpu (when the kernel offers it) below
    `folder`."""
    enabled = (folder / "cgroup.subtree_control").read_text().split()
    available = (folder / "cgroup.controllers").read_text().split()
    wanted = ["memory", "pids", *(["cpu"] if "cpu" in available else [])]
    missing = [c for c in wanted if c not in enabled]
    if missing:
        _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0

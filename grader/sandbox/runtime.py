"""What the bubblewrap sandbox mounts of the host: the runtime (a virtual environment with
torch and numpy) at /runtime, and of the host's /usr only what its python and the shared
objects it and its packages load need, each at its own path, read-only.

The list is computed, not kept by hand: the interpreter the runtime's pyvenv.cfg names, its
standard library, and the closure of shared libraries that `ldd` reports for the
interpreter, the standard library's extension modules and every shared object of the
runtime (torch's, numpy's...). Libraries inside the runtime are reached through /runtime;
every path outside it is reproduced exactly, symlinks included (`/lib64` -> `usr/lib64`,
the loader's own link...), so that the dynamic loader finds each library where the host's
does. Computed once per runtime and process (about a second: one `ldd` per file).
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.protocol import InfrastructureError

log = logging.getLogger(__name__)

RUNTIME_MOUNT = "/runtime"
LDD = "/usr/bin/ldd"
LDD_BATCH = 64  # files per ldd call
LDD_TIMEOUT_S = 120
MAX_SYMLINK_DEPTH = 16
# Host libraries a CUDA job needs beyond the closure (torch dlopen()s the driver).
NVIDIA_LIBRARY_PATTERNS = ("libcuda.so*", "libnvidia-*.so*")


@dataclass(frozen=True)
class HostPath:
    """One path of the host reproduced in the sandbox: a symlink, or a read-only bind."""

    path: str
    link_target: str | None = None  # None: bind the host's file or folder at `path`

    def bwrap_args(self) -> list[str]:
        if self.link_target is not None:
            return ["--symlink", self.link_target, self.path]
        return ["--ro-bind", self.path, self.path]


@dataclass(frozen=True)
class RuntimeView:
    """Everything of the host the sandbox sees of its runtime."""

    runtime_dir: Path
    interpreter: str  # the host python the runtime's bin/python links to
    host_paths: tuple[HostPath, ...]

    def bwrap_args(self) -> list[str]:
        args = ["--ro-bind", str(self.runtime_dir), RUNTIME_MOUNT]
        for host_path in self.host_paths:
            args += host_path.bwrap_args()
        return args


def runtime_view(runtime_dir: Path) -> RuntimeView:
    """The mounts of `runtime_dir` (see the module docstring). Raises InfrastructureError
    when the runtime is not a virtual environment or its libraries cannot be listed."""
    return _runtime_view(runtime_dir.resolve(), _fingerprint(runtime_dir))


def nvidia_libraries(view: RuntimeView) -> list[HostPath]:
    """The host's NVIDIA driver libraries, next to the runtime's libc (CUDA jobs only)."""
    libc_folders = {Path(p.path).parent for p in view.host_paths if "/libc.so" in p.path}
    found: dict[str, HostPath] = {}
    for folder in libc_folders:
        for pattern in NVIDIA_LIBRARY_PATTERNS:
            for library in folder.glob(pattern):
                _reproduce(str(library), found)
    return list(found.values())


@functools.lru_cache(maxsize=4)
def _runtime_view(runtime_dir: Path, fingerprint: tuple[float, ...]) -> RuntimeView:
    interpreter, stdlib = _base_python(runtime_dir)
    objects = [interpreter, *_shared_objects(stdlib / "lib-dynload")]
    objects += _shared_objects(runtime_dir)
    found: dict[str, HostPath] = {}
    for path in [interpreter, str(stdlib), *_libraries(objects, runtime_dir)]:
        _reproduce(path, found)
    for link in _links_out_of(runtime_dir):
        _reproduce(link, found)
    paths = tuple(sorted(found.values(), key=lambda p: p.path))
    log.info("sandbox runtime %s: %d host paths", runtime_dir, len(paths))
    return RuntimeView(runtime_dir, interpreter, paths)


def fingerprint(runtime_dir: Path) -> tuple[float, ...]:
    """Changes when the runtime is reinstalled (see _fingerprint)."""
    return _fingerprint(runtime_dir)


def _fingerprint(runtime_dir: Path) -> tuple[float, ...]:
    """Changes when the runtime is reinstalled (its config and site-packages). A runtime
    others may write to is refused: the worker runs `ldd` on it, every sandbox imports it."""
    config = runtime_dir / "pyvenv.cfg"
    try:
        if runtime_dir.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise InfrastructureError(f"the sandbox runtime {runtime_dir} is writable by others")
        return (config.stat().st_mtime, *(p.stat().st_mtime for p in runtime_dir.glob("lib/*")))
    except OSError as error:
        raise InfrastructureError(
            f"the sandbox runtime {runtime_dir} is missing ({error})"
        ) from None


def _base_python(runtime_dir: Path) -> tuple[str, Path]:
    """(the interpreter, its standard library) from the runtime's pyvenv.cfg."""
    config = _pyvenv(runtime_dir / "pyvenv.cfg")
    version = ".".join(config.get("version", "").split(".")[:2])
    executable = config.get("executable") or os.path.join(config.get("home", ""), "python3")
    interpreter = os.path.realpath(executable)
    stdlib = Path(os.path.realpath(Path(interpreter).parent.parent / "lib" / f"python{version}"))
    if not version or not Path(interpreter).is_file() or not (stdlib / "os.py").is_file():
        raise InfrastructureError(
            f"the sandbox runtime {runtime_dir} is not a virtual environment of a host python "
            "(run scripts/setup-python.sh)"
        )
    return interpreter, stdlib


def _pyvenv(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InfrastructureError(f"cannot read {path}: {error}") from None
    pairs = (line.split("=", 1) for line in lines if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _shared_objects(folder: Path) -> list[str]:
    return sorted(
        str(path)
        for path in folder.rglob("*.so*")
        if path.is_file() and not path.is_symlink() and ".so" in path.name
    )


def _libraries(objects: list[str], runtime_dir: Path) -> set[str]:
    """Every library outside the runtime that `ldd` resolves for `objects`."""
    found: set[str] = set()
    for start in range(0, len(objects), LDD_BATCH):
        found |= _ldd(objects[start : start + LDD_BATCH])
    inside = f"{runtime_dir}{os.sep}"
    return {path for path in found if not os.path.realpath(path).startswith(inside)}


def _ldd(objects: list[str]) -> set[str]:
    try:
        done = subprocess.run(
            [LDD, *objects],
            capture_output=True,
            text=True,
            timeout=LDD_TIMEOUT_S,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise InfrastructureError(f"cannot list the sandbox runtime's libraries: {error}") from None
    if done.returncode < 0:
        # killed (the OOM killer, an operator): what it printed is a part of the list, and
        # a view built on it would fail every sandbox of this worker as if each reference
        # were broken; a fault of ours, retried (the view is not kept)
        raise InfrastructureError(
            f"cannot list the sandbox runtime's libraries: {LDD} was killed by signal "
            f"{-done.returncode}"
        )
    return set(_paths_in_ldd_output(done.stdout))


def _paths_in_ldd_output(output: str) -> Iterable[str]:
    """'libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)' and the loader's own
    '/lib64/ld-linux-x86-64.so.2 (0x...)' lines; not 'not found', not the vDSO."""
    for line in output.splitlines():
        if not line.startswith("\t"):
            continue
        target = line.split("=>", 1)[1] if "=>" in line else line
        path = target.strip().split(" (", 1)[0].strip()
        if path.startswith("/"):
            yield path


def _links_out_of(runtime_dir: Path) -> list[str]:
    """Where the runtime's absolute symlinks point (bin/python3.11 -> /usr/bin/python3.11)."""
    targets = []
    for link in (runtime_dir / "bin").iterdir():
        if link.is_symlink() and os.path.isabs(os.readlink(link)):
            targets.append(os.readlink(link))
    return targets


def _reproduce(path: str, found: dict[str, HostPath], depth: int = 0) -> None:
    """Add `path` to `found` as the sandbox needs it: each symlink met on the way as a
    symlink, the real file or folder at the end as a bind."""
    if depth > MAX_SYMLINK_DEPTH:
        raise InfrastructureError(f"too many symlinks resolving {path}")
    current = Path("/")
    parts = Path(path).parts[1:]
    for index, part in enumerate(parts):
        current = current / part
        if current.is_symlink():
            target = os.readlink(current)
            found.setdefault(str(current), HostPath(str(current), link_target=target))
            base = target if os.path.isabs(target) else str(current.parent / target)
            rest = os.path.join(base, *parts[index + 1 :])
            _reproduce(os.path.normpath(rest), found, depth + 1)
            return
    if not current.exists():
        raise InfrastructureError(f"the sandbox runtime needs {path}, which is missing")
    found.setdefault(str(current), HostPath(str(current)))

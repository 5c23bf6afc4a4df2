"""The harness, copied where the unprivileged sandbox user can read it, whatever the
checkout's own permissions (a clone in root's 0700 home, a path with spaces).

`publish(source, root)` copies the harness's files into `<root>/harness-<sha256 of their
names and bytes>`, world-readable and owned by the worker, once: a changed harness gets a
new folder, an unchanged one is reused. The folder is written under a temporary name and
renamed into place, so a sandbox never sees a half-copied harness. `root` must belong to
the worker and be writable by no one else; when the default root cannot be created (a
worker that is not root), a private folder in the system's temporary directory is used.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from grader.protocol import InfrastructureError

DEFAULT_PUBLISH_ROOT = Path("/var/lib/gradlab/sandbox")
FOLDER_MODE = 0o755
FILE_MODE = 0o644
SKIPPED = ("__pycache__",)


def publish(source: Path, root: Path | None = None) -> Path:
    """The published copy of `source` (see the module docstring)."""
    files = _files(source)
    folder = _usable_root(root) / f"harness-{_digest(source, files)}"
    if folder.is_dir():
        return folder
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
    try:
        for relative in files:
            target = staging / relative
            target.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
            shutil.copyfile(source / relative, target)
            target.chmod(FILE_MODE)
        for path in (staging, *(p for p in staging.rglob("*") if p.is_dir())):
            path.chmod(FOLDER_MODE)
        with contextlib.suppress(FileExistsError, OSError):
            staging.rename(folder)  # another worker may have been faster: same content
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not folder.is_dir():
        raise InfrastructureError(f"cannot publish the harness into {folder}")
    return folder


@functools.cache
def digest_of(source: Path) -> str:
    """The digest of the harness's files (also part of the reference cache's key: a
    capture recorded by another harness may lack what the checks now read)."""
    return _digest(source, _files(source))


def _files(source: Path) -> list[Path]:
    if not (source / "main.py").is_file():
        raise InfrastructureError(f"the sandbox harness {source / 'main.py'} is missing")
    return sorted(
        path.relative_to(source)
        for path in source.rglob("*")
        if path.is_file() and not any(part in SKIPPED for part in path.parts)
        and path.suffix != ".pyc"
    )  # fmt: skip


def _digest(source: Path, files: list[Path]) -> str:
    digest = hashlib.sha256()
    for relative in files:
        digest.update(str(relative).encode() + b"\0")
        digest.update(hashlib.sha256((source / relative).read_bytes()).digest())
    return digest.hexdigest()[:32]


def _usable_root(root: Path | None) -> Path:
    """`root`, or the default, or a private fallback: created if need be, always checked."""
    if root is not None:
        return _checked(_made(root))
    try:
        return _checked(_made(DEFAULT_PUBLISH_ROOT))
    except (PermissionError, InfrastructureError):  # e.g. a worker that is not root
        fallback = Path(tempfile.gettempdir()) / f"gradlab-sandbox-{os.geteuid()}"
        return _checked(_made(fallback))


def _made(root: Path) -> Path:
    """`root` and any missing parent, each made traversable by the sandbox user whatever
    the umask."""
    missing = [p for p in (root, *root.parents) if not p.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=FOLDER_MODE)
            folder.chmod(FOLDER_MODE)
    return root


def _checked(root: Path) -> Path:
    """A root someone else could write into could swap the harness: refuse it."""
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise InfrastructureError(f"{root} must be a folder owned by the worker's user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InfrastructureError(f"{root} must not be writable by others")
    if not os.access(root, os.W_OK):
        raise PermissionError(f"{root} is not writable")
    return root

"""Reference captures cached on disk: one JSON file per key, written atomically.

The key covers (package content hash, seed, sandbox runtime, reference device), so an
edited exercise, another torch or another device never reuses a stale capture. Entries
are plain JSON, validated again when read back (grader.capture.validate_capture);
nothing is ever pickled.

The directory is bounded: after each write, the least recently used entries (by
modification time; a read touches its entry) are removed until the entries take at most
`max_bytes` (GRADLAB_REFERENCE_CACHE_MAX_MB, default 512 MB). A removed entry costs one
reference run, never a wrong verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_CACHE_DIR = "var/reference-cache"  # what `python -m grader` uses by default
KEY_PATTERN = re.compile(r"^[0-9a-f]{64}$")
MAX_ENTRY_BYTES = 8_000_000
MAX_MB_ENV = "GRADLAB_REFERENCE_CACHE_MAX_MB"
DEFAULT_MAX_MB = 512


def cache_key(content_hash: str, seed: int | None, runtime: str, device: str) -> str:
    """SHA-256 over the parts; `seed` is None for script exercises (they take none)."""
    parts = [content_hash, "-" if seed is None else str(seed), runtime, device]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class ReferenceCache:
    """A directory of `<key>.json` files holding reference captures. The caller chooses
    the directory (the platform from its settings, the CLI from GRADLAB_CACHE_DIR)."""

    def __init__(self, directory: str | Path, *, max_bytes: int | None = None) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes if max_bytes is not None else max_bytes_from_env()

    def _path(self, key: str) -> Path:
        if not KEY_PATTERN.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        return raw if isinstance(raw, dict) else None

    def put(self, key: str, capture: dict[str, Any]) -> None:
        path = self._path(key)
        self.directory.mkdir(parents=True, exist_ok=True)
        data = json.dumps(capture, separators=(",", ":"), allow_nan=False)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self.evict()

    def evict(self) -> None:
        """Removes the least recently used entries until the rest fit in `max_bytes`."""
        entries = []
        for entry in self.directory.glob("*.json"):
            if entry.name.startswith("."):
                continue  # another writer's file, not yet in place
            with contextlib.suppress(OSError):  # another worker may remove it first
                info = entry.stat()
                entries.append((info.st_mtime_ns, info.st_size, entry))
        total = sum(size for _, size, _ in entries)
        for _, size, entry in sorted(entries, key=lambda item: item[0]):
            if total <= self.max_bytes:
                break
            entry.unlink(missing_ok=True)
            total -= size

    def clear(self) -> None:
        for path in self.directory.glob("*.json"):
            path.unlink(missing_ok=True)


def max_bytes_from_env() -> int:
    """GRADLAB_REFERENCE_CACHE_MAX_MB in bytes (DEFAULT_MAX_MB when unset or invalid)."""
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        megabytes = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    if not megabytes >= 0 or megabytes == float("inf"):
        megabytes = DEFAULT_MAX_MB
    return int(megabytes * 1_000_000)

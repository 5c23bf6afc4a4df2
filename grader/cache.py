"""Reference captures cached on disk: one JSON file per key, written atomically.

The key covers (package content hash, seed, sandbox runtime, reference device), so an
edited exercise, another torch or another device never reuses a stale capture. Entries
are plain JSON, validated again when read back (grader.capture.validate_capture);
nothing is ever pickled.
"""

from __future__ import annotations

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


def cache_key(content_hash: str, seed: int | None, runtime: str, device: str) -> str:
    """SHA-256 over the parts; `seed` is None for script exercises (they take none)."""
    parts = [content_hash, "-" if seed is None else str(seed), runtime, device]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class ReferenceCache:
    """A directory of `<key>.json` files holding reference captures. The caller chooses
    the directory (the platform from its settings, the CLI from GRADLAB_CACHE_DIR)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

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

    def clear(self) -> None:
        for path in self.directory.glob("*.json"):
            path.unlink(missing_ok=True)

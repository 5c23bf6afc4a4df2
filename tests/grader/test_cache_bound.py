"""The reference cache is bounded (grader/cache.py): past its size, the least recently
used entries go (a read counts as a use), so one entry per script submission cannot
fill the worker's disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.cache import DEFAULT_MAX_MB, MAX_MB_ENV, ReferenceCache, cache_key, max_bytes_from_env

ENTRY = {"protocol": 1, "kind": "script", "padding": "x" * 1_000}


def key(number: int) -> str:
    return cache_key(f"package-{number}", number, "runtime", "cpu")


def age(cache: ReferenceCache, number: int, seconds_ago: int) -> None:
    """Marks entry `number` as last used `seconds_ago` (mtimes, not a clock to wait on)."""
    path = cache.directory / f"{key(number)}.json"
    when = path.stat().st_mtime - seconds_ago
    os.utime(path, (when, when))


def test_writes_past_the_bound_remove_the_least_recently_used_entries(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path, max_bytes=3_500)  # room for three entries
    for number in range(3):
        cache.put(key(number), ENTRY)
        age(cache, number, 100 - number)  # 0 is the oldest, then 1, then 2

    cache.put(key(3), ENTRY)

    assert cache.get(key(0)) is None
    assert [cache.get(key(n)) == ENTRY for n in (1, 2, 3)] == [True, True, True]
    assert sum(p.stat().st_size for p in tmp_path.glob("*.json")) <= 3_500


def test_a_read_keeps_an_entry_over_older_unread_ones(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path, max_bytes=3_500)
    for number in range(3):
        cache.put(key(number), ENTRY)
        age(cache, number, 100 - number)
    assert cache.get(key(0)) == ENTRY  # used now: the most recent

    cache.put(key(3), ENTRY)

    assert cache.get(key(0)) == ENTRY
    assert cache.get(key(1)) is None


def test_many_submissions_never_grow_the_cache_past_its_bound(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path, max_bytes=20_000)
    for number in range(200):
        cache.put(key(number), ENTRY)

    files = list(tmp_path.glob("*.json"))
    assert 0 < len(files) <= 20
    assert sum(p.stat().st_size for p in files) <= 20_000


def test_the_bound_comes_from_the_environment_in_megabytes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MAX_MB_ENV, "2")
    assert ReferenceCache(tmp_path).max_bytes == 2_000_000
    monkeypatch.setenv(MAX_MB_ENV, "lots")
    assert max_bytes_from_env() == DEFAULT_MAX_MB * 1_000_000
    monkeypatch.delenv(MAX_MB_ENV)
    assert max_bytes_from_env() == DEFAULT_MAX_MB * 1_000_000

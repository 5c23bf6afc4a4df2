"""The bridge to grader/: builds a GradeJob from a stored version and runs the engine with
the configured sandbox backend and reference cache. Plain data in, a Report out."""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol, cast

from django.conf import settings

from grader import engine
from grader.cache import ReferenceCache
from grader.protocol import ExerciseError, InfrastructureError, Report
from grader.sandbox import build_backend
from grader.sandbox.base import Sandbox
from grader.sandbox.config import SandboxConfig
from grader.spec import Package, PackageError, package_hash

PACKAGE_CACHE_SIZE = 64  # parsed packages a process keeps (one per exercise version)


def sandbox_config() -> SandboxConfig:
    """The sandbox backend's configuration: the GRADLAB_SANDBOX_CONFIG setting (read from
    the environment by SandboxConfig.from_environ), its backend and zygote switch those of
    the GRADLAB_SANDBOX and GRADLAB_SANDBOX_ZYGOTE settings (the test settings turn the
    zygote on by default)."""
    if settings.GRADLAB_SANDBOX_CONFIG is None:
        raise InfrastructureError(settings.GRADLAB_SANDBOX_CONFIG_ERROR)
    return dataclasses.replace(
        settings.GRADLAB_SANDBOX_CONFIG,
        backend=settings.GRADLAB_SANDBOX,
        zygote=settings.GRADLAB_SANDBOX_ZYGOTE,
    )


class WarmSandbox(Sandbox, Protocol):
    """A backend that can start its warm helpers (a zygote) ahead of the first job, as
    both backends (bubblewrap, Docker) do."""

    def prepare(self) -> None: ...


@functools.cache
def sandbox() -> WarmSandbox:
    """One backend per process (a backend may keep warm, torch-preloaded helpers).
    A failure (e.g. a missing runtime) raises InfrastructureError and is not cached."""
    return cast(WarmSandbox, build_backend(sandbox_config()))


@functools.cache
def reference_cache() -> ReferenceCache:
    return ReferenceCache(settings.GRADLAB_CACHE_DIR)


class _Packages:
    """Parsed packages by the digest of their files: a job hashes its version's files
    (microseconds) instead of parsing and validating the manifest again (milliseconds).
    A Package is immutable, so jobs may share one; an edited file is another digest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._parsed: OrderedDict[str, Package] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, files: Mapping[str, str]) -> Package:
        digest = package_hash(files)
        with self._lock:
            if digest in self._parsed:
                self._parsed.move_to_end(digest)
                return self._parsed[digest]
        package = Package.from_files(files)  # raises PackageError: nothing is cached
        with self._lock:
            self._parsed[digest] = package
            while len(self._parsed) > self.size:
                self._parsed.popitem(last=False)
        return package


_PACKAGES = _Packages(PACKAGE_CACHE_SIZE)


def package_of(files: Mapping[str, str]) -> Package:
    """The package of a stored version's `files`, parsed once per process and content."""
    try:
        return _PACKAGES.get(files)
    except PackageError as error:
        raise ExerciseError(f"stored exercise version is invalid: {error}") from error


def seed_for(version_seed: int, submission_id: int) -> int:
    """The hidden-case seed of one submission against one exercise version: an HMAC of
    the submission's id under the version's secret seed (grader.engine.submission_seed)."""
    return engine.submission_seed(version_seed.to_bytes(8, "big", signed=True), str(submission_id))


def run_grader(*, files: dict[str, str], code: str, seed: int, job_id: str) -> Report:
    """Grades `code` against the package `files`. Raises InfrastructureError (our fault,
    retry) or ExerciseError (the exercise is broken)."""
    job = engine.GradeJob(
        package=package_of(files),
        code=code,
        seed=seed,
        device=settings.GRADLAB_DEVICE,
        job_id=job_id,
    )
    return engine.grade(job, sandbox=sandbox(), cache=reference_cache())


def json_safe(value: Any) -> Any:
    """PostgreSQL's jsonb/text reject NaN/Infinity and NUL: encode them as FORMAT.md does
    for captures ("nan", "inf", "-inf") and replace NUL with U+FFFD."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return text_safe(value)
    if isinstance(value, dict):
        return {text_safe(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def text_safe(text: str) -> str:
    return text.replace("\x00", "\ufffd")


def sandboxes_reap() -> list[str]:
    """Removes sandbox containers whose deadline has passed (a worker died mid-job). Only
    the Docker backend leaves anything behind; bubblewrap's die with their worker."""
    if settings.GRADLAB_SANDBOX != "docker":
        return []
    from grader.sandbox.docker import reap_expired

    return reap_expired()

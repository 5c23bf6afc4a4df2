"""Fixtures of the grading-engine tests: the real bubblewrap sandbox (the session's grading
backend, tests/gradlab_fixtures.py), the session's reference cache, and a helper that
grades code against a package."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from grading_helpers import package_at

from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.protocol import Report
from grader.sandbox.base import Sandbox
from grader.spec import Package

GradeCode = Callable[..., Report]


@pytest.fixture
def grade_code(sandbox: Sandbox, reference_cache: ReferenceCache) -> GradeCode:
    def run(package: str | Package, code: str, **job: object) -> Report:
        chosen = package_at(package) if isinstance(package, str) else package
        return grade(
            GradeJob(package=chosen, code=code, **job),  # type: ignore[arg-type]
            sandbox=sandbox,
            cache=reference_cache,
        )

    return run

"""Helpers of the platform tests (imported by name: tests/ holds no packages)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

from gradlab_fixtures import EXERCISES, MODULE_SLUG

# The end-to-end exercise: chain-rule, or the worked example while chain-rule is absent.
E2E_SLUG = (
    "chain-rule" if (EXERCISES / "chain-rule" / "exercise.toml").is_file() else "first-gradient"
)


def _objectives_toml() -> str:
    """The course module's [[objectives]] tables (the copied packages' checks name them)."""
    from grader import spec

    return "".join(
        f"\n[[objectives]]\nid = {json.dumps(o.id)}\ntitle = {json.dumps(o.title)}\n"
        for o in spec.load_module(EXERCISES).objectives
    )


OBJECTIVES = _objectives_toml()


def write_module(folder: Path, slugs: tuple[str, ...], slug: str = MODULE_SLUG) -> Path:
    """An exercises/ folder holding copies of real packages, listed in module.toml."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(f'"{s}"' for s in slugs)
    (folder / "module.toml").write_text(
        f'slug = "{slug}"\ntitle = "Test module"\nexercises = [{listed}]\n{OBJECTIVES}',
        encoding="utf-8",
    )
    for name in slugs:
        target = folder / name
        if not target.exists():
            shutil.copytree(EXERCISES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def package_file(slug: str, path: str) -> str:
    return (EXERCISES / slug / path).read_text(encoding="utf-8")


def manifest(slug: str) -> dict[str, Any]:
    return tomllib.loads(package_file(slug, "exercise.toml"))


def graded_and_saved(learner: Any, slug: str, code: str, sandbox: Any, cache: Any) -> Any:
    """`code` graded through the real sandbox and saved by the worker's own final write
    (_finish_graded, which PostgreSQL holds to valid text): the Submission row as saved."""
    from common import jobs
    from grader.engine import GradeJob, grade
    from grader.spec import load_package
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    report = grade(GradeJob(package=load_package(EXERCISES / slug), code=code),
                   sandbox=sandbox, cache=cache)  # fmt: skip
    submission, _ = submission_create(learner=learner, exercise_slug=slug, code=code)
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    return Submission.objects.get(pk=submission.pk)

"""Writes to the catalog: `exercises_load` syncs the database with exercises/ on disk;
instructor jobs (validate, regrade) are created here and run by a worker."""

from __future__ import annotations

import json
import logging
import secrets
import tomllib
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.selectors import AnyUser
from common import jobs, ratelimit
from common.errors import InvalidInput, NotFound
from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module, Objective
from courses.selectors import module_objectives
from courses.statement import render_statement
from courses.validation import ValidationOutcome, outcome_json, version_validate
from grader import archive, spec
from submissions.services import exercise_regrade

logger = logging.getLogger(__name__)

HIDDEN_SEED_BOUND = 2**31  # seeds stay within a signed 32-bit int for every consumer


@dataclass(frozen=True)
class LoadResult:
    module: str
    created: tuple[str, ...] = ()  # new exercises
    updated: tuple[str, ...] = ()  # a new version of an existing exercise
    unchanged: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # listed in module.toml but not on disk (yet)
    broken: tuple[str, ...] = ()  # PackageError messages of packages left as they were


def exercises_load(*, exercises_dir: Path, strict: bool = False) -> LoadResult:
    """Loads module.toml and every package it lists, in its order, from a folder: read under
    the rules of an uploaded archive (grader.archive), then `module_tree_load`."""
    name = str(exercises_dir).rstrip("/")
    tree = archive.tree_of(archive.read_folder(exercises_dir), name=name)
    return module_tree_load(tree=tree, origin=name, strict=strict)


def module_archive_import(*, data: bytes, name: str, strict: bool = True) -> LoadResult:
    """Loads a module from an uploaded `.tar.gz` or `.zip` archive: the same path as
    `exercises_load` once the archive is read (archive.ArchiveError names what it refused)."""
    tree = archive.tree_of(archive.read_archive(data, name=name), name=name)
    return module_tree_load(tree=tree, origin=name, strict=strict)


def module_tree_load(
    *, tree: archive.ExerciseTree, origin: str, strict: bool = False
) -> LoadResult:
    """Idempotent: a new ExerciseVersion is made only when a package's content hash changed.
    A malformed package is left as it was in the database (its last good version stays
    current) and reported in `broken`; with strict=True it raises grader.spec.PackageError
    instead, before anything is written."""
    listing = tree.module
    if listing is None:
        raise archive.ArchiveError(f"{origin}/{spec.MODULE_MANIFEST}: file missing")
    packages: list[tuple[int, spec.Package]] = []
    missing: list[str] = []
    broken: list[str] = []
    for order, slug in enumerate(listing.exercises):
        if spec.MANIFEST not in tree.packages.get(slug, {}):
            missing.append(slug)
            continue
        try:
            packages.append((order, tree.package(slug, origin=origin)))
        except spec.PackageError as error:
            if strict:
                raise
            broken.append(str(error))
    with transaction.atomic():
        module = module_sync(
            slug=listing.slug,
            title=listing.title,
            module_toml=tree.module_toml,
            objectives=listing.objectives,
        )
        outcomes = [
            exercise_sync(module=module, package=package, order=order)
            for order, package in packages
        ]
    return LoadResult(
        module=module.slug,
        created=tuple(slug for slug, what in outcomes if what == "created"),
        updated=tuple(slug for slug, what in outcomes if what == "updated"),
        unchanged=tuple(slug for slug, what in outcomes if what == "unchanged"),
        missing=tuple(missing),
        broken=tuple(broken),
    )


def module_sync(
    *,
    slug: str,
    title: str,
    order: int = 0,
    module_toml: str = "",
    objectives: tuple[spec.Objective, ...] = (),
) -> Module:
    """Creates or updates a module and its learning objectives; `module_toml` is the text it
    was loaded from (kept so that an export gives back the same bytes)."""
    module, _ = Module.objects.update_or_create(
        slug=slug, defaults={"title": title, "order": order, "module_toml": module_toml}
    )
    objectives_replace(module=module, objectives=objectives)
    return module


def objectives_replace(*, module: Module, objectives: tuple[spec.Objective, ...]) -> None:
    """The module's objectives become exactly `objectives`, in their order."""
    with transaction.atomic():
        module.objectives.exclude(slug__in=[o.id for o in objectives]).delete()
        for order, objective in enumerate(objectives):
            Objective.objects.update_or_create(
                module=module,
                slug=objective.id,
                defaults={"title": objective.title, "order": order},
            )


# -- export: the same layout as exercises/, byte for byte ----------------------------------


def module_export(*, module: Module, kind: str) -> bytes:
    """The module's published exercises (their current versions) and its module.toml."""
    exercises = list(_exported(module))
    packages = {e.slug: e.current_version.files for e in exercises if e.current_version}
    toml_text = module_toml_text(module=module, slugs=tuple(packages))
    return archive.write_archive(archive.module_files(toml_text, packages), kind)


def exercise_export(*, exercise: Exercise, kind: str) -> bytes:
    """One package, `<slug>/...`, as published (its current version)."""
    if exercise.current_version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no published version.")
    packages = {exercise.slug: exercise.current_version.files}
    return archive.write_archive(archive.package_files(packages), kind)


def _exported(module: Module) -> QuerySet[Exercise]:
    return (
        Exercise.objects.filter(module=module, current_version__isnull=False)
        .select_related("current_version")
        .order_by("order", "slug")
    )


def module_toml_text(*, module: Module, slugs: tuple[str, ...]) -> str:
    """The module.toml it was loaded from while it still says the same; else a new one."""
    objectives = module_objectives(module)
    if module.module_toml:
        try:
            kept = spec.parse_module(module.module_toml, spec.MODULE_MANIFEST)
        except spec.PackageError:
            kept = None
        now = spec.Module(
            slug=module.slug, title=module.title, exercises=slugs, objectives=objectives
        )
        if kept == now:
            return module.module_toml
    listed = ", ".join(json.dumps(slug) for slug in slugs)
    text = (
        f"slug = {json.dumps(module.slug)}\n"
        f"title = {json.dumps(module.title, ensure_ascii=False)}\n"
        f"exercises = [{listed}]\n"
    )
    for objective in objectives:
        text += (
            f"\n[[objectives]]\nid = {json.dumps(objective.id)}\n"
            f"title = {json.dumps(objective.title, ensure_ascii=False)}\n"
        )
    return text


def exercise_sync(*, module: Module, package: spec.Package, order: int) -> tuple[str, str]:
    """Creates or updates one exercise; returns (slug, "created"|"updated"|"unchanged")."""
    manifest = package.manifest
    exercise, created = Exercise.objects.select_for_update().get_or_create(
        slug=package.slug,
        defaults={
            "module": module,
            "title": manifest.title,
            "kind": manifest.kind,
            "points": manifest.points,
            "order": order,
            "device": manifest.device,
        },
    )
    Exercise.objects.filter(pk=exercise.pk).update(
        module=module,
        title=manifest.title,
        kind=manifest.kind,
        points=manifest.points,
        order=order,
        device=manifest.device,
    )
    version = version_publish(version=version_save(exercise=exercise, package=package))
    changed = exercise.current_version_id != version.pk
    if changed:
        Exercise.objects.filter(pk=exercise.pk).update(current_version=version)
    if created:
        return package.slug, "created"
    return package.slug, "updated" if changed else "unchanged"


def version_save(
    *, exercise: Exercise, package: spec.Package, user: AnyUser | None = None
) -> ExerciseVersion:
    """The version holding exactly this content: the existing one (published or a draft),
    else a new draft. Content never changes once written (it is keyed by its hash)."""
    version = exercise.versions.filter(content_hash=package.content_hash).first()
    if version is not None:
        return version
    return version_create(
        exercise=exercise, files=dict(package.files), statement=package.statement, user=user
    )


def version_create(
    *, exercise: Exercise, files: dict[str, str], statement: str, user: AnyUser | None = None
) -> ExerciseVersion:
    """A new draft version (no number) of `files`, which need not be a valid package."""
    try:
        manifest = tomllib.loads(files.get(spec.MANIFEST, ""))
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError):  # kept, not parsed
        manifest = {}
    return ExerciseVersion.objects.create(
        exercise=exercise,
        number=None,
        saved_by_id=user.pk if user is not None and user.is_authenticated else None,
        content_hash=spec.package_hash(files),
        files=files,
        manifest=manifest,
        statement=statement,
        statement_html=render_statement(statement),
        starter_code=files.get("starter.py", ""),
        hidden_seed=secrets.randbelow(HIDDEN_SEED_BOUND),
    )


def version_publish(*, version: ExerciseVersion) -> ExerciseVersion:
    """Gives a draft the exercise's next version number (a published version keeps its)."""
    if version.number is not None:
        return version
    with transaction.atomic():
        Exercise.objects.select_for_update().filter(pk=version.exercise_id).first()
        last = (
            ExerciseVersion.objects.filter(exercise_id=version.exercise_id, number__isnull=False)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        version.number = (last or 0) + 1
        version.published_at = timezone.now()
        version.save(update_fields=["number", "published_at"])
    return version


# -- instructor jobs (validate, regrade): created here, run by a worker ---------------------

JOB_TIME_LIMIT_MESSAGE = "It took longer than the job time limit ({limit} s)."
JOB_FAULT_MESSAGE = "The sandbox could not run (not the package's fault): {error}"
JOB_LOST_MESSAGE = "The job did not finish after {attempts} attempts (its worker stopped)."


def _job_lost_fields(job: ExerciseJob, now: datetime) -> dict[str, Any]:
    return {
        "status": ExerciseJob.Status.FAILED,
        "finished_at": now,
        "lease_expires_at": None,
        "error": JOB_LOST_MESSAGE.format(attempts=job.attempts),
        "outcome": None,  # a lost attempt's partial rows are no outcome
    }


EXERCISE_JOBS: jobs.JobKind[ExerciseJob] = jobs.JobKind(
    name="exercise job",
    model=ExerciseJob,
    task_name="gradlab.run_exercise_job",
    queue_of=lambda job: settings.GRADLAB_QUEUE_CPU,
    running_lease_seconds=lambda: settings.GRADLAB_JOB_RUNNING_LEASE_SECONDS,
    queued_lease_seconds=lambda: settings.GRADLAB_QUEUED_LEASE_SECONDS,
    max_attempts=lambda: settings.GRADLAB_MAX_ATTEMPTS,
    lost_fields=_job_lost_fields,
)


def exercise_job_create(
    *, exercise: Exercise, kind: str, user: AnyUser, version: ExerciseVersion | None = None
) -> ExerciseJob:
    """A queued job on `version` (default: the exercise's current version), sent to a
    worker after commit."""
    if kind not in ExerciseJob.Kind.values:
        raise InvalidInput({"kind": f"Unknown job kind {kind!r}."})
    version_id = version.pk if version is not None else exercise.current_version_id
    if version_id is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no version.")
    with transaction.atomic():
        # One queued or running job per exercise version and kind: asking again while one
        # is pending is that job (the exercise row's lock makes the check and the insert
        # one step for concurrent requests on PostgreSQL; SQLite writes one at a time).
        Exercise.objects.select_for_update().filter(pk=exercise.pk).exists()
        pending = _pending_job(exercise_id=exercise.pk, version_id=version_id, kind=kind)
        if pending is not None:
            return pending
        _job_rate_limit_check(user=user)
        job = ExerciseJob.objects.create(
            exercise=exercise,
            version_id=version_id,
            kind=kind,
            requested_by_id=user.pk,
            lease_expires_at=jobs.job_queued_until(EXERCISE_JOBS),
        )
        jobs.job_enqueue_on_commit(EXERCISE_JOBS, job_id=job.pk, queue=EXERCISE_JOBS.queue_of(job))
    return job


def _pending_job(*, exercise_id: int, version_id: int, kind: str) -> ExerciseJob | None:
    pending = (ExerciseJob.Status.QUEUED, ExerciseJob.Status.RUNNING)
    return ExerciseJob.objects.filter(
        exercise_id=exercise_id, version_id=version_id, kind=kind, status__in=pending
    ).first()


def _job_rate_limit_check(*, user: AnyUser) -> None:
    """At most GRADLAB_JOB_RATE_LIMIT_COUNT instructor jobs per user per window: validations
    and regrades run in the same sandboxes as learners' submissions."""
    ratelimit.window_check(
        ExerciseJob.objects.filter(requested_by_id=user.pk),
        limit=settings.GRADLAB_JOB_RATE_LIMIT_COUNT,
        window_s=settings.GRADLAB_JOB_RATE_LIMIT_WINDOW_SECONDS,
        what="validations and regrades",
    )


def exercise_job_run(*, job_id: int) -> str:
    """Claims the job (queued -> running), runs it, stores its outcome once. Returns the
    job's status afterwards, or "skipped" when it was not ours to run."""
    attempt = jobs.job_claim(EXERCISE_JOBS, job_id=job_id)
    if attempt is None:
        logger.info("exercise job %s: not queued, skipping this delivery", job_id)
        return "skipped"
    job = ExerciseJob.objects.select_related("exercise", "version").get(pk=job_id)
    _job_progress(job_id, attempt, None)  # an earlier attempt's partial rows are not ours
    try:
        outcome = _job_outcome(job, attempt)
    except SoftTimeLimitExceeded:
        limit = settings.GRADLAB_JOB_SOFT_TIME_LIMIT
        _job_finish(job_id, attempt, error=JOB_TIME_LIMIT_MESSAGE.format(limit=limit))
        return ExerciseJob.Status.FAILED
    except Exception as error:  # a sandbox fault, or a bug of ours: retried, then failed
        logger.warning("exercise job %s attempt %s: %s", job_id, attempt, error, exc_info=True)
        return _after_job_fault(job, attempt, error)
    _job_finish(job_id, attempt, outcome=outcome)
    return ExerciseJob.Status.DONE


def _job_outcome(job: ExerciseJob, attempt: int) -> dict[str, Any]:
    if job.kind == ExerciseJob.Kind.VALIDATE:

        def progress(partial: ValidationOutcome) -> None:
            _job_progress(job.pk, attempt, outcome_json(partial))

        return outcome_json(version_validate(version=job.version, on_progress=progress))
    preview = job.kind == ExerciseJob.Kind.REGRADE_PREVIEW
    return {
        **asdict(exercise_regrade(exercise=job.exercise, apply=not preview)),
        "preview": preview,
    }


def _after_job_fault(job: ExerciseJob, attempt: int, error: Exception) -> str:
    if attempt >= settings.GRADLAB_MAX_ATTEMPTS:
        message = JOB_FAULT_MESSAGE.format(error=error)
        _job_finish(job.pk, attempt, error=message)
        return ExerciseJob.Status.FAILED
    countdown = jobs.retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_RETRY_BACKOFF_SECONDS,
        cap=settings.GRADLAB_RETRY_BACKOFF_MAX_SECONDS,
    )
    _job_progress(job.pk, attempt, None)  # queued again: this attempt's rows are void
    jobs.job_release(EXERCISE_JOBS, row=job, attempt=attempt, countdown=countdown)
    return ExerciseJob.Status.QUEUED


def _job_progress(job_id: int, attempt: int, outcome: dict[str, Any] | None) -> None:
    """The partial outcome of a running job, written only under our claim (a job taken
    over by another attempt keeps that attempt's rows)."""
    jobs.job_owned(EXERCISE_JOBS, job_id=job_id, attempt=attempt).update(outcome=outcome)


def _job_finish(
    job_id: int, attempt: int, *, outcome: dict[str, Any] | None = None, error: str = ""
) -> bool:
    """done with an outcome, or failed with an error: written only under our claim."""
    status = ExerciseJob.Status.FAILED if error else ExerciseJob.Status.DONE
    updated = jobs.job_owned(EXERCISE_JOBS, job_id=job_id, attempt=attempt).update(
        status=status,
        outcome=outcome,
        error=error,
        finished_at=timezone.now(),
        lease_expires_at=None,
    )
    if updated != 1:
        logger.warning("exercise job %s attempt %s lost its claim; outcome discarded",
                       job_id, attempt)  # fmt: skip
    return updated == 1


def exercise_jobs_sweep(*, now: datetime | None = None) -> jobs.SweepResult:
    """Re-queues instructor jobs whose lease expired (a lost message, a dead worker)."""
    return jobs.jobs_sweep(EXERCISE_JOBS, now=now)

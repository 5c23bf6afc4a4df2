"""Writes to the catalog: `exercises_load` syncs the database with exercises/ on disk;
versions are saved and published here (instructor jobs: authoring.jobs)."""

from __future__ import annotations

import json
import logging
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.selectors import AnyUser
from common.errors import NotFound
from courses.models import Exercise, ExerciseVersion, Module, Objective
from courses.selectors import module_objectives
from courses.statement import render_statement
from grader import spec
from grader.authoring import archive

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

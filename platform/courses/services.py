"""Writes to the catalog. `exercises_load` syncs the database with exercises/ on disk."""

from __future__ import annotations

import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from courses.models import Exercise, ExerciseVersion, Module
from courses.statement import render_statement
from grader import spec

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
    """Loads module.toml and every package it lists, in its order. Idempotent: a new
    ExerciseVersion is made only when a package's content hash changed. A malformed
    package is left as it was in the database (its last good version stays current) and
    reported in `broken`; with strict=True it raises grader.spec.PackageError instead,
    before anything is written."""
    listing = spec.load_module(exercises_dir)
    packages: list[tuple[int, spec.Package]] = []
    missing: list[str] = []
    broken: list[str] = []
    for order, slug in enumerate(listing.exercises):
        folder = Path(exercises_dir) / slug
        if not (folder / spec.MANIFEST).is_file():
            missing.append(slug)
            continue
        try:
            packages.append((order, spec.load_package(folder)))
        except spec.PackageError as error:
            if strict:
                raise
            broken.append(str(error))
    with transaction.atomic():
        module = module_sync(slug=listing.slug, title=listing.title)
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


def module_sync(*, slug: str, title: str, order: int = 0) -> Module:
    module, _ = Module.objects.update_or_create(
        slug=slug, defaults={"title": title, "order": order}
    )
    return module


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
    version = exercise.versions.filter(content_hash=package.content_hash).first()
    if version is None:
        version = exercise_version_create(exercise=exercise, package=package)
    changed = exercise.current_version_id != version.pk
    if changed:
        Exercise.objects.filter(pk=exercise.pk).update(current_version=version)
    if created:
        return package.slug, "created"
    return package.slug, "updated" if changed else "unchanged"


def exercise_version_create(*, exercise: Exercise, package: spec.Package) -> ExerciseVersion:
    last = exercise.versions.order_by("-number").values_list("number", flat=True).first()
    files = dict(package.files)
    return ExerciseVersion.objects.create(
        exercise=exercise,
        number=(last or 0) + 1,
        content_hash=package.content_hash,
        files=files,
        manifest=tomllib.loads(files[spec.MANIFEST]),
        statement=package.statement,
        statement_html=render_statement(package.statement),
        starter_code=package.starter,
        hidden_seed=secrets.randbelow(HIDDEN_SEED_BOUND),
    )

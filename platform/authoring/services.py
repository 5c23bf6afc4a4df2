"""Authoring: modules and exercises as data their instructors own (issue 14).

An exercise's content is always an ExerciseVersion, keyed by its content hash. Every save
is a draft (a version without a number, `Exercise.draft_version`), valid or not: its
problem, if any, is the PackageError that names the file and the field. A validation job
(authoring.jobs.exercise_job_create, run by a worker) grades the draft's reference,
starter, wrong solutions and alternatives; publishing gives the draft the next version
number and makes it current, and is refused until a validation of that very content
passed. Learners only ever get published versions; a submission keeps the version it was
graded against. Access is checked by the callers (courses.access): instructors write,
reviewers read and validate.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import Enrollment
from accounts.selectors import AnyUser
from authoring.jobs import exercise_job_create
from common.errors import Conflict, Forbidden, InvalidInput, NotFound
from common.text import NOT_TEXT, has_lone_surrogate, scrub
from courses.access import user_may_create_modules
from courses.manifest import stored_manifest
from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module
from courses.selectors import module_objectives
from courses.services import objectives_replace, version_create, version_publish
from grader import spec
from grader.authoring import archive, scaffold
from grader.authoring.problems import ProblemPlace, problem_place
from submissions.late import ScoreChange, late_marks_refresh, late_policy_changes

SLUG_LINE = re.compile(r'^slug\s*=\s*"[^"\n]*"', re.MULTILINE)
CONTENT_HASH = re.compile(r"^[0-9a-f]{64}$")  # spec.package_hash: sha256 hex


@dataclass(frozen=True)
class Draft:
    version: ExerciseVersion
    problem: str  # "" when the files are a valid package; else the PackageError's message

    @property
    def place(self) -> ProblemPlace | None:
        """The file and line the problem points at (the editor marks that line)."""
        return problem_place(self.problem, self.version.files) if self.problem else None


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # "added" | "removed" | "changed"
    diff: str  # unified diff of the text


# -- modules --------------------------------------------------------------------------


def module_create(*, slug: str, title: str, user: AnyUser) -> Module:
    """A new, empty module; its creator becomes its instructor."""
    if not user_may_create_modules(user=user):
        raise Forbidden("Only instructors may create modules.")
    if not spec.SLUG_PATTERN.match(slug):
        raise InvalidInput({"slug": ["Lowercase words joined by -, e.g. autograd-basics."]})
    if not title.strip():
        raise InvalidInput({"title": ["A module needs a title."]})
    order = (Module.objects.aggregate(last=Max("order"))["last"] or 0) + 1
    assert user.pk is not None  # user_may_create_modules: signed in
    try:
        with transaction.atomic():
            module = Module.objects.create(slug=slug, title=title.strip(), order=order)
            Enrollment.objects.create(user_id=user.pk, module=module, role="instructor")
    except IntegrityError:
        raise InvalidInput({"slug": [f"A module {slug!r} exists already."]}) from None
    return module


def module_order_set(*, module: Module, slugs: list[str]) -> None:
    """Orders the module's exercises as `slugs` lists them (every one exactly once)."""
    current = set(module.exercises.values_list("slug", flat=True))
    if sorted(slugs) != sorted(current):
        raise InvalidInput({"exercises": ["List every exercise of the module exactly once."]})
    with transaction.atomic():
        for order, slug in enumerate(slugs):
            Exercise.objects.filter(module=module, slug=slug).update(order=order)


# -- exercises and drafts ------------------------------------------------------------------


def exercise_create(
    *, module: Module, slug: str, user: AnyUser, title: str = "", kind: str = "script"
) -> Draft:
    """A new exercise in `module` whose first draft is grader.scaffold's package."""
    if kind not in scaffold.KINDS:
        raise InvalidInput({"kind": [f"One of {', '.join(scaffold.KINDS)}."]})
    try:
        files = scaffold.new_package(slug, title=title, kind=kind)
    except spec.PackageError:
        raise InvalidInput({"slug": ["Lowercase words joined by -, e.g. cube-gradient."]}) from None
    return exercise_import(module=module, slug=slug, files=files, user=user)


def exercise_import(*, module: Module, slug: str, files: dict[str, str], user: AnyUser) -> Draft:
    """Saves `files` as a draft of exercise `slug` of `module`, creating the exercise."""
    exercise = Exercise.objects.filter(slug=slug).first()
    if exercise is not None and exercise.module_id != module.pk:
        raise InvalidInput({"slug": [f"Exercise {slug!r} belongs to another module."]})
    if exercise is None:
        order = (module.exercises.aggregate(last=Max("order"))["last"] or 0) + 1
        try:
            exercise = Exercise.objects.create(
                module=module,
                slug=slug,
                title=scaffold.title_of(slug),
                kind=Exercise.Kind.SCRIPT,
                points=0,
                order=order,
            )
        except IntegrityError:
            raise InvalidInput({"slug": [f"Exercise {slug!r} exists already."]}) from None
    return draft_save(exercise=exercise, files=files, user=user)


def draft_save(*, exercise: Exercise, files: dict[str, str], user: AnyUser) -> Draft:
    """Saves the files as the exercise's draft, valid or not (an upload's rules apply to
    the paths, sizes and text; the problem of an invalid package is returned)."""
    _refuse_lone_surrogates(files)
    files = archive.check_package(files, slug=exercise.slug, name=exercise.slug)
    problem = package_problem(files, exercise)
    statement = files.get("statement.md", "")
    if not problem:
        statement = spec.Package.from_files(files).statement
    version = exercise.versions.filter(content_hash=spec.package_hash(files)).first()
    if version is None:
        version = version_create(exercise=exercise, files=files, statement=statement, user=user)
    elif version.pk not in (exercise.current_version_id, exercise.draft_version_id):
        _saved_again(version)  # earlier content again (a restore): recent for the history
    draft = None if version.pk == exercise.current_version_id else version
    Exercise.objects.filter(pk=exercise.pk).update(draft_version=draft)
    exercise.draft_version = draft
    return Draft(version=version, problem=problem)


def _saved_again(version: ExerciseVersion) -> None:
    """An existing version is the draft again: the history lists it as saved now, and the
    drafts pruning (which keeps the most recently saved) keeps it with the new ones."""
    version.saved_again_at = timezone.now()
    ExerciseVersion.objects.filter(pk=version.pk).update(saved_again_at=version.saved_again_at)


def _refuse_lone_surrogates(files: dict[str, str]) -> None:
    for path, text in files.items():
        if has_lone_surrogate(str(path)) or has_lone_surrogate(str(text)):
            raise InvalidInput({"files": [f"{scrub(path)}: {NOT_TEXT}"]})


def package_problem(files: dict[str, str], exercise: Exercise) -> str:
    """ "" for a valid package of `exercise` whose checks are tagged only with its module's
    objectives; else the PackageError's message."""
    slug = exercise.slug
    try:
        package = spec.Package.from_files(files, origin=slug)
        objectives = tuple(o.id for o in module_objectives(exercise.module))
        spec.check_objectives(package, objectives, origin=slug)
    except spec.PackageError as error:
        return str(error)
    if package.slug != slug:
        return f"{slug}/{spec.MANIFEST}: slug: must stay {slug!r}"
    return ""


def draft_of(exercise: Exercise) -> ExerciseVersion | None:
    """What the author works on: the draft, else the published version."""
    return exercise.draft_version or exercise.current_version


def draft_get(*, exercise: Exercise) -> Draft:
    version = draft_of(exercise)
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no content yet.")
    return Draft(version=version, problem=package_problem(dict(version.files), exercise))


def draft_validate(*, exercise: Exercise, user: AnyUser) -> ExerciseJob:
    """A background validation job of the draft (or of the published version)."""
    version = draft_of(exercise)
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no content yet.")
    return exercise_job_create(
        exercise=exercise, kind=ExerciseJob.Kind.VALIDATE, user=user, version=version
    )


def validation_latest(*, version: ExerciseVersion) -> ExerciseJob | None:
    return (
        ExerciseJob.objects.filter(version=version, kind=ExerciseJob.Kind.VALIDATE)
        .order_by("-id")
        .first()
    )


def exercise_publish(*, exercise: Exercise) -> ExerciseVersion:
    """The draft becomes the next version, current for learners. Refused (409) unless the
    latest validation of exactly this content is done and passed."""
    version = draft_of(exercise)
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no content yet.")
    _require_passed_validation(version)
    package = spec.Package.from_files(dict(version.files))
    with transaction.atomic():
        version = version_publish(version=version)
        manifest = package.manifest
        Exercise.objects.filter(pk=exercise.pk).update(
            current_version=version,
            draft_version=None,
            is_published=True,
            title=manifest.title,
            kind=manifest.kind,
            points=manifest.points,
            device=manifest.device,
        )
    exercise.refresh_from_db()
    return version


def _require_passed_validation(version: ExerciseVersion) -> None:
    problem = package_problem(dict(version.files), version.exercise)
    if problem:
        raise Conflict(f"The package is invalid: {problem}")
    job = validation_latest(version=version)
    if job is None:
        raise Conflict("Validate this content before publishing it.")
    if job.pending:
        raise Conflict("Its validation is still running; publish once it has passed.")
    outcome = job.outcome or {}
    if job.status != ExerciseJob.Status.DONE or not outcome.get("ok"):
        problems = outcome.get("problems", 1) if job.status == ExerciseJob.Status.DONE else 1
        raise Conflict(f"Its validation failed ({problems} not as declared): fix and validate.")


def exercise_unpublish(*, exercise: Exercise) -> None:
    """Hides the exercise from learners; its versions and submissions stay."""
    Exercise.objects.filter(pk=exercise.pk).update(is_published=False)
    exercise.is_published = False


def exercise_schedule_set(
    *,
    exercise: Exercise,
    release_at: datetime | None,
    due_at: datetime | None,
    late_counts: bool,
) -> None:
    """When learners see the exercise, when it is due, and whether late work counts. Every
    writer of these fields goes through here (the pages, the API, the Django admin): the
    submissions are marked late again, and the learners whose grades that changes are
    told to the apps (their LMS grades are posted again: submissions.late)."""
    problem = schedule_problem(release_at=release_at, due_at=due_at)
    if problem:
        raise InvalidInput({"due_at": [problem]})
    with transaction.atomic():
        was = Exercise.objects.select_for_update().values_list("late_counts", flat=True)
        policy_changed = was.get(pk=exercise.pk) != late_counts
        Exercise.objects.filter(pk=exercise.pk).update(
            release_at=release_at, due_at=due_at, late_counts=late_counts
        )
        exercise.release_at, exercise.due_at, exercise.late_counts = release_at, due_at, late_counts
        # A moved due date re-marks what is late; a new policy changes what late work earns.
        late_marks_refresh(exercise=exercise, policy_changed=policy_changed)


def exercise_schedule_preview(
    *,
    exercise: Exercise,
    release_at: datetime | None,
    due_at: datetime | None,
    late_counts: bool,
) -> list[ScoreChange]:
    """What exercise_schedule_set would do, without doing it: the learners whose grade it
    changes (from what to what), by username. The same refusal of dates that cannot be."""
    problem = schedule_problem(release_at=release_at, due_at=due_at)
    if problem:
        raise InvalidInput({"due_at": [problem]})
    return late_policy_changes(exercise=exercise, due_at=due_at, late_counts=late_counts)


def schedule_problem(*, release_at: datetime | None, due_at: datetime | None) -> str:
    """Why these dates cannot be an exercise's schedule ("" when they can)."""
    if release_at and due_at and due_at <= release_at:
        return "The due date must come after the release date."
    return ""


# -- archives and versions ---------------------------------------------------------------


def module_archive_upload(
    *, module: Module, data: bytes, name: str, user: AnyUser, copy: bool = False
) -> list[Draft]:
    """Every package of an uploaded archive becomes a draft of its exercise in `module`
    (created if new); a module.toml, if any, orders them. Nothing is published. With
    `copy`, each exercise is a new one, `<slug>-<module slug>` (its manifest's slug line
    rewritten), so that another module's exercises can be imported beside the originals."""
    tree = archive.tree_of(archive.read_archive(data, name=name), name=name)
    slugs = {slug: copy_slug(slug, module) if copy else slug for slug in tree.packages}
    with transaction.atomic():
        if tree.module is not None:
            _objectives_add(module, tree.module.objectives)
        drafts = [
            exercise_import(
                module=module,
                slug=slugs[slug],
                files=_renamed(dict(files), slugs[slug]) if copy else dict(files),
                user=user,
            )
            for slug, files in tree.packages.items()
        ]
        if tree.module is not None:
            for order, slug in enumerate(tree.module.exercises):
                target = slugs.get(slug, slug)
                Exercise.objects.filter(module=module, slug=target).update(order=order)
    return drafts


def _objectives_add(module: Module, objectives: tuple[spec.Objective, ...]) -> None:
    """An archive's objectives the module lacks are added after its own (so that the
    imported checks' tags name objectives of the module); its own stay as they are."""
    own = module_objectives(module)
    known = {o.id for o in own}
    added = tuple(o for o in objectives if o.id not in known)
    if added:
        objectives_replace(module=module, objectives=own + added)


def module_objectives_set(*, module: Module, objectives: list[dict[str, str]]) -> None:
    """The module's learning objectives become `objectives` (`{"id", "title"}`, in order):
    ids unique slugs, titles non-empty. An objective that a check of an exercise's draft or
    published version still names cannot be removed."""
    try:
        parsed = spec.parse_objectives(objectives, spec.MODULE_MANIFEST)
    except spec.PackageError as error:
        raise InvalidInput({"objectives": [str(error)]}) from None
    kept = {o.id for o in parsed}
    for exercise in module.exercises.select_related("current_version", "draft_version"):
        for version in (exercise.current_version, exercise.draft_version):
            missing = sorted(_tags_of(version) - kept) if version is not None else []
            if version is not None and missing:
                message = (
                    f"{', '.join(missing)}: still tagged on checks of {exercise.slug!r} "
                    f"({version.label}); untag them first."
                )
                raise InvalidInput({"objectives": [message]})
    objectives_replace(module=module, objectives=parsed)


def _tags_of(version: ExerciseVersion) -> set[str]:
    return {tag for check in stored_manifest(version).checks for tag in check.objectives}


def copy_slug(slug: str, module: Module) -> str:
    suffix = f"-{module.slug}"
    return slug if slug.endswith(suffix) else f"{slug}{suffix}"[:100].rstrip("-")


def _renamed(files: dict[str, str], slug: str) -> dict[str, str]:
    manifest = files.get(spec.MANIFEST, "")
    files[spec.MANIFEST] = SLUG_LINE.sub(f'slug = "{slug}"', manifest, count=1)
    return files


def draft_export(*, exercise: Exercise, kind: str) -> bytes:
    """The draft (else the published version) as `<slug>/...` in an archive."""
    version = draft_of(exercise)
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no content yet.")
    return archive.write_archive(archive.package_files({exercise.slug: version.files}), kind)


def version_get(*, exercise: Exercise, label: str) -> ExerciseVersion:
    """ "draft", "current", a version number or a version's content hash (a saved draft's
    name in the author page's history)."""
    if label == "draft":
        version = draft_of(exercise)
    elif label == "current":
        version = exercise.current_version
    elif label.isdigit():
        version = exercise.versions.filter(number=int(label)).first()
    elif CONTENT_HASH.match(label):
        version = exercise.versions.filter(content_hash=label).first()
    else:
        version = None
    if version is None:
        raise NotFound(f"No version {label!r} of {exercise.slug!r}.")
    return version


def versions_diff(old: ExerciseVersion, new: ExerciseVersion) -> list[FileDiff]:
    """File by file, what changed from `old` to `new` (unified diffs, 3 lines of context)."""
    diffs = []
    for path in sorted(set(old.files) | set(new.files)):
        before, after = old.files.get(path), new.files.get(path)
        if before == after:
            continue
        status = "added" if before is None else "removed" if after is None else "changed"
        text = "".join(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                (after or "").splitlines(keepends=True),
                fromfile=f"{old.label}/{path}",
                tofile=f"{new.label}/{path}",
            )
        )
        diffs.append(FileDiff(path=path, status=status, diff=text))
    return diffs

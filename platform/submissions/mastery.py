"""Mastery of a module's learning objectives, from the checks tagged with them.

Definition (docs/authoring.md, "Learning objectives and mastery"). For a learner and one objective:
take, for each published exercise of the module, the learner's latest graded submission
(not a preview, not held for review; late ones count: mastery is about learning, not the
grade). Its evidence is every check of the version it was graded against whose manifest
tags the objective, weighted by the check's points; a check passed when its result passed
(a run that failed passed none, a submission rejected after review passed none).

    mastery = points of the objective's checks passed / points of the objective's checks

over all those submissions; None while there is no evidence. The objective is shown at
mastery >= SHOWN (every point at stake would be 1.0; 0.8 forgives one small check). The
class's mastery of an objective is the mean of its learners' mastery, over the learners with
evidence; its failures are the failed tagged checks of their latest submissions, counted by
diagnosis. Only a module's learners make the class (instructors' tries do not).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from accounts.models import Enrollment
from accounts.selectors import AnyUser
from courses.manifest import stored_manifest
from courses.models import Exercise, Module
from courses.selectors import exercises_visible_to, module_objectives
from grader import spec
from grader.checks.diagnoses.catalogue import DIAGNOSES, Diagnosis, describe
from submissions.models import Submission

SHOWN = 0.8
TOP_DIAGNOSES = 5
NO_RESULT = ""  # the diagnosis of a check without a result (a failed run, a rejection)
NO_RESULT_TITLE = "no result (the run failed or was rejected)"
SHOWN_STATUS, NOT_YET, NO_EVIDENCE = "shown", "not-yet", "no-evidence"
STATUS_LABELS = {SHOWN_STATUS: "shown", NOT_YET: "not yet", NO_EVIDENCE: "no evidence yet"}


@dataclass(frozen=True)
class Failure:
    """A failed check tagged with the objective, in a learner's latest submission."""

    submission_id: int
    learner_id: int
    exercise: str  # slug
    exercise_title: str
    check: str
    order: int  # the check's position in the report (the feedback page's anchor)
    diagnosis: str  # a diagnosis slug, or NO_RESULT
    diagnosis_title: str


@dataclass(frozen=True)
class Evidence:
    """One tagged check of one latest submission."""

    objective: str
    exercise: str  # slug
    points: float
    passed: bool
    failure: Failure | None


@dataclass
class _Tally:
    points: float = 0.0
    passed: float = 0.0
    exercises: set[str] = field(default_factory=set)  # with evidence
    failures: list[Failure] = field(default_factory=list)


@dataclass(frozen=True)
class ObjectiveMastery:
    objective: str
    title: str
    points: float  # points of its checks in the latest submissions
    passed_points: float
    exercises_tried: int  # exercises whose latest submission holds evidence
    exercises: int  # published exercises with a check tagged with it
    failures: tuple[Failure, ...]

    @property
    def mastery(self) -> float | None:
        return self.passed_points / self.points if self.points else None

    @property
    def status(self) -> str:
        if self.mastery is None:
            return NO_EVIDENCE
        return SHOWN_STATUS if self.mastery >= SHOWN else NOT_YET

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]

    @property
    def failure_groups(self) -> tuple[FailureGroup, ...]:
        """The failures by submission and diagnosis: one line each, with its first check."""
        groups: dict[tuple[int, str], list[Failure]] = {}
        for failure in self.failures:
            groups.setdefault((failure.submission_id, failure.diagnosis), []).append(failure)
        return tuple(FailureGroup(first=group[0], checks=len(group)) for group in groups.values())


@dataclass(frozen=True)
class FailureGroup:
    first: Failure
    checks: int


@dataclass(frozen=True)
class DiagnosisCount:
    exercise: str
    exercise_title: str
    diagnosis: str
    title: str
    count: int
    latest_submission_id: int  # the newest submission that shows it


@dataclass(frozen=True)
class ClassObjective:
    objective: str
    title: str
    learners: int  # learners with evidence
    learners_shown: int
    mastery: float | None  # mean of their mastery
    failures: int  # failed tagged checks in their latest submissions
    diagnoses: tuple[DiagnosisCount, ...]  # the most frequent behind those failures


@dataclass(frozen=True)
class ClassMastery:
    learners: int  # enrolled learners
    objectives: tuple[ClassObjective, ...]  # in the module's order

    @property
    def most_failed(self) -> tuple[ClassObjective, ...]:
        failed = [o for o in self.objectives if o.failures]
        return tuple(sorted(failed, key=lambda o: -o.failures))


# -- reads -------------------------------------------------------------------------------


def learner_mastery(*, module: Module, user: AnyUser) -> list[ObjectiveMastery]:
    """`user`'s mastery of each objective of `module`, over the exercises they may see.
    Access: the caller checks that `user` may read `module` (or teaches it)."""
    exercises = list(exercises_visible_to(user=user).filter(module=module))
    return _one_learner(module, exercises, user.pk)


def learner_mastery_of(*, module: Module, learner_id: int) -> list[ObjectiveMastery]:
    """One learner's mastery over the module's published exercises (for its instructors)."""
    return _one_learner(module, list(_published(module)), learner_id)


def _one_learner(
    module: Module, exercises: list[Exercise], learner_id: Any
) -> list[ObjectiveMastery]:
    latest = _latest(Submission.objects.filter(learner_id=learner_id, exercise__in=exercises))
    evidence = [item for submission in latest for item in evidence_of(submission)]
    return _per_objective(_Scope.of(module, exercises), evidence)


def class_mastery(*, module: Module) -> ClassMastery:
    """The class's mastery per objective: its learners' latest submissions of each published
    exercise. Access: the caller checks that the user teaches `module`."""
    exercises = list(_published(module))
    learners = Enrollment.objects.filter(module=module, role=Enrollment.Role.LEARNER)
    latest = _latest(
        Submission.objects.filter(exercise__in=exercises, learner_id__in=learners.values("user_id"))
    )
    by_learner: dict[int, list[Evidence]] = defaultdict(list)
    for submission in latest:
        by_learner[submission.learner_id] += evidence_of(submission)
    scope = _Scope.of(module, exercises)
    per_learner = [_per_objective(scope, evidence) for evidence in by_learner.values()]
    objectives = tuple(
        _class_objective(objective, [rows[index] for rows in per_learner])
        for index, objective in enumerate(scope.objectives)
    )
    return ClassMastery(learners=learners.count(), objectives=objectives)


def _published(module: Module) -> QuerySet[Exercise]:
    return Exercise.objects.filter(module=module, current_version__isnull=False).select_related(
        "current_version"
    )


def _latest(submissions: QuerySet[Submission]) -> list[Submission]:
    """The latest graded submission per (learner, exercise) that may count: not a preview,
    not held for review. The newest by creation, the higher id breaking a tie; a correlated
    subquery rather than DISTINCT ON, which only PostgreSQL has (`make run` uses SQLite)."""
    counting = submissions.filter(status=Submission.Status.GRADED, preview=False).exclude(
        review=Submission.Review.HELD
    )
    newest = counting.filter(
        learner_id=OuterRef("learner_id"), exercise_id=OuterRef("exercise_id")
    ).order_by("-created_at", "-id")
    return list(
        counting.filter(pk=Subquery(newest.values("pk")[:1]))
        .select_related("exercise", "version")
        .prefetch_related("checks")
        .order_by("learner_id", "exercise_id")
    )


# -- evidence ----------------------------------------------------------------------------


def evidence_of(submission: Submission) -> list[Evidence]:
    """The tagged checks of one graded submission, against the version it was graded with."""
    manifest = stored_manifest(submission.version)
    results = {r.order: r for r in submission.checks.all()}
    rejected = submission.review == Submission.Review.REJECTED
    found = []
    for order, check in enumerate(manifest.checks):
        if not check.objectives:
            continue
        result = None if rejected else results.get(order)
        failure = None
        if result is None or not result.passed:
            failure = _failure(submission, manifest, order, check.name, result)
        slug = submission.exercise.slug
        found += [
            Evidence(tag, slug, float(check.points), failure is None, failure)
            for tag in check.objectives
        ]
    return found


def _failure(
    submission: Submission, manifest: spec.Manifest, order: int, name: str, result: Any
) -> Failure:
    """A failed check; without its result (a failed run, a rejection) it has no diagnosis."""
    diagnosis = result.diagnosis if result is not None else NO_RESULT
    return Failure(
        submission_id=submission.pk,
        learner_id=submission.learner_id,
        exercise=submission.exercise.slug,
        exercise_title=submission.exercise.title,
        check=name or (result.name if result is not None else ""),
        order=order,
        diagnosis=diagnosis,
        diagnosis_title=diagnosis_title(diagnosis, manifest),
    )


def diagnosis_title(slug: str, manifest: spec.Manifest | None) -> str:
    """The title of a diagnosis slug: the exercise's own [diagnoses] first (`manifest`'s,
    none without one), then the grader's registry; an unknown slug is shown as itself."""
    if slug == NO_RESULT:
        return NO_RESULT_TITLE
    extra = extra_diagnoses(manifest) if manifest is not None else {}
    if slug in extra or slug in DIAGNOSES:
        return describe(slug, extra).title
    return slug


def extra_diagnoses(manifest: spec.Manifest) -> dict[str, Diagnosis]:
    """The diagnoses an exercise declares itself ([diagnoses]), as the grader's registry has
    its own."""
    return {
        slug: Diagnosis(slug, declared.title, declared.hint)
        for slug, declared in manifest.diagnoses.items()
    }


# -- tallies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """The module's objectives and how many of the exercises in view test each."""

    objectives: tuple[spec.Objective, ...]
    covering: Counter[str]

    @classmethod
    def of(cls, module: Module, exercises: Iterable[Exercise]) -> _Scope:
        return cls(module_objectives(module), _exercises_covering(exercises))


def _per_objective(scope: _Scope, evidence: Iterable[Evidence]) -> list[ObjectiveMastery]:
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    for item in evidence:
        tally = tallies[item.objective]
        tally.points += item.points
        tally.passed += item.points if item.passed else 0.0
        tally.exercises.add(item.exercise)
        if item.failure is not None:
            tally.failures.append(item.failure)
    return [
        ObjectiveMastery(
            objective=o.id,
            title=o.title,
            points=tallies[o.id].points,
            passed_points=tallies[o.id].passed,
            exercises_tried=len(tallies[o.id].exercises),
            exercises=scope.covering[o.id],
            failures=tuple(tallies[o.id].failures),
        )
        for o in scope.objectives
    ]


def _exercises_covering(exercises: Iterable[Exercise]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for exercise in exercises:
        version = exercise.current_version
        checks = stored_manifest(version).checks if version is not None else ()
        counts.update({tag for check in checks for tag in check.objectives})
    return counts


def _class_objective(objective: spec.Objective, rows: list[ObjectiveMastery]) -> ClassObjective:
    measured = [r.mastery for r in rows if r.mastery is not None]
    failures = [f for r in rows for f in r.failures]
    return ClassObjective(
        objective=objective.id,
        title=objective.title,
        learners=len(measured),
        learners_shown=sum(1 for r in rows if r.status == SHOWN_STATUS),
        mastery=sum(measured) / len(measured) if measured else None,
        failures=len(failures),
        diagnoses=_top_diagnoses(failures),
    )


def _top_diagnoses(failures: list[Failure]) -> tuple[DiagnosisCount, ...]:
    groups: dict[tuple[str, str], list[Failure]] = defaultdict(list)
    for failure in failures:
        groups[(failure.exercise, failure.diagnosis)].append(failure)
    ranked = sorted(groups.values(), key=lambda group: (-len(group), group[0].exercise))
    return tuple(
        DiagnosisCount(
            exercise=group[0].exercise,
            exercise_title=group[0].exercise_title,
            diagnosis=group[0].diagnosis,
            title=group[0].diagnosis_title,
            count=len(group),
            latest_submission_id=max(f.submission_id for f in group),
        )
        for group in ranked[:TOP_DIAGNOSES]
    )

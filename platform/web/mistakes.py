"""The named mistakes of one learner in a module, counted per submission: how often each
diagnosis occurred in their own work (the instructor's per-learner page). As on the
feedback page (web.presenters), the generic "Wrong value" is not counted in a
submission that has a specific diagnosis."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from courses.manifest import stored_manifest
from courses.models import Exercise, Module
from submissions.mastery import diagnosis_title
from submissions.models import CheckResult
from web.presenters import GENERIC_DIAGNOSIS


@dataclass(frozen=True)
class MistakeCount:
    slug: str
    title: str
    submissions: int  # this learner's submissions in which a failed check named it
    exercises: tuple[str, ...]  # titles of the exercises it occurred in


def learner_mistakes(*, module: Module, learner_id: int) -> tuple[MistakeCount, ...]:
    """Most frequent first; the learner's graded, non-preview submissions in `module`."""
    rows = (
        CheckResult.objects.filter(
            submission__exercise__module=module,
            submission__learner_id=learner_id,
            submission__preview=False,
            passed=False,
        )
        .exclude(diagnosis="")
        .values_list("submission_id", "submission__exercise_id", "diagnosis")
        .distinct()
    )
    named: dict[int, set[str]] = defaultdict(set)
    exercise_of: dict[int, int] = {}
    for submission_id, exercise_id, diagnosis in rows:
        named[submission_id].add(diagnosis)
        exercise_of[submission_id] = exercise_id
    counts: Counter[str] = Counter()
    where: dict[str, set[int]] = defaultdict(set)
    for submission_id, slugs in named.items():
        for slug in _specific(slugs):
            counts[slug] += 1
            where[slug].add(exercise_of[submission_id])
    return _described(counts, where)


def _specific(slugs: set[str]) -> set[str]:
    """The generic wrong value only where nothing more specific was found."""
    return slugs - {GENERIC_DIAGNOSIS} if slugs - {GENERIC_DIAGNOSIS} else slugs


def _described(counts: Counter[str], where: dict[str, set[int]]) -> tuple[MistakeCount, ...]:
    ids = {pk for found in where.values() for pk in found}
    exercises = {
        e.pk: e for e in Exercise.objects.filter(pk__in=ids).select_related("current_version")
    }
    result = []
    for slug, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        found = sorted((exercises[pk] for pk in where[slug]), key=lambda e: e.title)
        version = found[0].current_version if found else None
        manifest = stored_manifest(version) if version is not None else None
        titles = tuple(e.title for e in found)
        result.append(MistakeCount(slug, diagnosis_title(slug, manifest), n, titles))
    return tuple(result)

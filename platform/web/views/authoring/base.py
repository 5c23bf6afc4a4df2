"""What the authoring views share: their getters, URLs, breadcrumbs and the messages their
refused actions leave on the page they redirect to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib import messages
from django.http import HttpRequest
from django.urls import reverse

from common.errors import Conflict, DomainError, InvalidInput, NotFound
from courses.access import module_get_reviewed, module_get_taught
from courses.models import Exercise, Module
from grader.spec import PackageError
from web.manifest_form import ManifestFormError


def exercise_in(module: Module, slug: str) -> Exercise:
    exercise = Exercise.objects.filter(module=module, slug=slug).first()
    if exercise is None:
        raise NotFound("No such exercise in this module.")
    return exercise


def module_for_writing(request: HttpRequest, module_slug: str) -> Module:
    """The module whose authoring page posted: 404 unless the user reviews or teaches it,
    403 unless they teach it."""
    module_get_reviewed(slug=module_slug, user=request.user)
    return module_get_taught(slug=module_slug, user=request.user)


def exercise_for(
    request: HttpRequest, module_slug: str, exercise_slug: str, *, writes: bool
) -> Exercise:
    """The exercise whose editor posted: 404 unless the user reviews or teaches its module
    (or no such exercise), 403 for an action that `writes` unless they teach it."""
    exercise = exercise_in(module_get_reviewed(slug=module_slug, user=request.user), exercise_slug)
    if writes:
        module_get_taught(slug=module_slug, user=request.user)
    return exercise


def author_url(module: Module, exercise: Exercise | None = None) -> str:
    if exercise is None:
        return reverse("web:author_module", args=[module.slug])
    return reverse("web:author_exercise", args=[module.slug, exercise.slug])


def crumbs(module: Module, *more: tuple[str, str]) -> list[tuple[str, str]]:
    return [
        (f"Teach: {module.title}", reverse("web:teach_module", args=[module.slug])),
        ("Author", author_url(module) if more else ""),
        *more,
    ]


def error_text(error: DomainError) -> str:
    if isinstance(error, InvalidInput):
        return " ".join(
            f"{field}: {' '.join(m) if isinstance(m, list) else m}"
            for field, m in error.errors.items()
        )
    return error.message


@contextmanager
def module_refusals(request: HttpRequest) -> Iterator[None]:
    """A refused module action becomes error messages (a CSV's problems one a line)."""
    try:
        yield
    except InvalidInput as error:
        for problem in error.errors.get("csv", []):  # one message a line of the file
            messages.error(request, problem)
        if set(error.errors) != {"csv"}:
            messages.error(request, error_text(error))
    except (DomainError, PackageError) as error:
        text = str(error) if isinstance(error, PackageError) else error_text(error)
        messages.error(request, text)


@contextmanager
def exercise_refusals(request: HttpRequest) -> Iterator[None]:
    """A refused exercise action becomes an error message."""
    try:
        yield
    except Conflict as error:
        messages.error(request, f"Not published: {error.message}")
    except (ManifestFormError, PackageError) as error:
        messages.error(request, str(error))
    except DomainError as error:
        messages.error(request, error_text(error))

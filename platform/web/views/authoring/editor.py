"""One exercise's editor: the page (manifest form and TOML view, every file, statement
preview) and its saves, three ways (the form, the TOML, save and validate), and the dates."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from authoring import history
from authoring import services as authoring
from common.errors import InvalidInput
from courses.access import module_get_reviewed, module_is_taught_by
from courses.models import Exercise
from courses.selectors import module_objectives
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.checks.registry import REGISTRY
from submissions.late import late_policy_changes
from web.deadlines import Schedule
from web.manifest_form import FormRows, apply_form, form_rows
from web.views.authoring.base import (
    author_url,
    crumbs,
    exercise_for,
    exercise_in,
    exercise_refusals,
)
from web.views.deadlines import late_policy_url

NEW_FILE_KINDS = ("wrong", "alternatives", "cases.py")  # cases.py: function exercises


@login_required
@require_GET
def author_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = exercise_in(module, exercise_slug)
    draft = authoring.draft_get(exercise=exercise)
    files = dict(draft.version.files)
    job = authoring.validation_latest(version=draft.version)
    form = form_rows(files.get("exercise.toml", ""))
    context = {
        "module": module,
        "exercise": exercise,
        "draft": draft,
        "files": sorted(files.items(), key=lambda kv: _file_order(kv[0])),
        "toml": files.get("exercise.toml", ""),
        "form": form,
        "statement_html": mark_safe(draft.version.statement_html),  # nh3-sanitised when saved
        "job": job,
        "versions": exercise.versions.filter(number__isnull=False).order_by("-number"),
        "history": history.exercise_history(exercise=exercise),
        "drafts_kept_note": history.drafts_kept_note(),
        "may_edit": module_is_taught_by(module_id=module.pk, user=request.user),
        "new_file_kinds": NEW_FILE_KINDS,
        "check_types": sorted(REGISTRY),
        "diagnoses": sorted(DIAGNOSES),
        "objectives": module_objectives(module),
        "manifest_rows": _manifest_rows(form),
        "crumbs": crumbs(module, (exercise.title, "")),
        "nav": "teach",
    }
    return render(request, "web/author_exercise.html", context)


def _manifest_rows(form: FormRows | None) -> list[tuple[str, Any, str, str]]:
    if form is None:
        return []
    return [
        ("wrong", form.wrong, "wrong", "Wrong solutions"),
        ("alternative", form.alternative, "alternative", "Alternatives"),
    ]


def _file_order(path: str) -> tuple[int, str]:
    first = ("exercise.toml", "statement.md", "starter.py", "solution.py", "cases.py")
    return (first.index(path), path) if path in first else (len(first), path)


@login_required
@require_POST
def save_draft(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """The editor saved with its manifest from the form."""
    return _save(request, exercise_for(request, module_slug, exercise_slug, writes=True))


@login_required
@require_POST
def save_toml(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """The editor saved with its manifest from the TOML view."""
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    return _save(request, exercise, toml=True)


@login_required
@require_POST
def save_and_validate(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """The editor saved as save_draft does, then validated when it is a valid package."""
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    return _save(request, exercise, validate=True)


def _save(
    request: HttpRequest, exercise: Exercise, *, toml: bool = False, validate: bool = False
) -> HttpResponse:
    with exercise_refusals(request):
        draft = authoring.draft_save(
            exercise=exercise, files=_posted_files(request, exercise, toml=toml), user=request.user
        )
        if draft.problem:
            messages.error(request, f"Saved as a draft, not yet valid: {draft.problem}")
        elif validate:
            authoring.draft_validate(exercise=exercise, user=request.user)
            messages.success(request, "Saved; validation started.")
        else:
            messages.success(request, "Draft saved.")
    return redirect(author_url(exercise.module, exercise))


def carries_editor(request: HttpRequest) -> bool:
    """The post came from the editor's one form (its files and manifest ride along), not
    from an older page or a client that posts the action alone."""
    return "toml" in request.POST or any(key.startswith("file:") for key in request.POST)


def unsaved_changes(request: HttpRequest, exercise: Exercise) -> bool:
    """The editor posted content that differs from the saved draft."""
    return _changed_files(request, exercise) is not None


def save_posted(request: HttpRequest, exercise: Exercise) -> authoring.Draft | None:
    """Saves the editor's posted content as the draft when it changed (None: nothing to
    save); a save that leaves the package invalid says so."""
    files = _changed_files(request, exercise)
    if files is None:
        return None
    draft = authoring.draft_save(exercise=exercise, files=files, user=request.user)
    if draft.problem:
        messages.error(request, f"Saved as a draft, not yet valid: {draft.problem}")
    return draft


def _changed_files(request: HttpRequest, exercise: Exercise) -> dict[str, str] | None:
    """The editor's posted files when they differ from the saved draft, else None. The
    manifest comes from the TOML view when its text was edited (or there is no form),
    else from the form, compared by meaning: the form writes the TOML anew."""
    if not carries_editor(request):
        return None
    saved = dict(authoring.draft_get(exercise=exercise).version.files)
    saved_toml = saved.get("exercise.toml", "")
    by_toml = _posted_toml(request, saved_toml) != saved_toml or "title" not in request.POST
    files = _posted_files(request, exercise, toml=by_toml)
    others = {path: text for path, text in files.items() if path != "exercise.toml"}
    if others != {p: t for p, t in saved.items() if p != "exercise.toml"}:
        return files
    if not _same_manifest(files.get("exercise.toml", ""), saved_toml):
        return files
    return None


def _posted_toml(request: HttpRequest, default: str) -> str:
    return str(request.POST.get("toml", default)).replace("\r\n", "\n")


def _same_manifest(posted: str, saved: str) -> bool:
    if posted == saved:
        return True
    try:
        return tomllib.loads(posted) == tomllib.loads(saved)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False


def _posted_files(request: HttpRequest, exercise: Exercise, *, toml: bool) -> dict[str, str]:
    """The draft's files as the page posted them: each file's textarea, files marked for
    deletion dropped, a new file added, and the manifest from the TOML view (`toml`) or
    the form."""
    current = dict(authoring.draft_get(exercise=exercise).version.files)
    files = {
        path: str(request.POST.get(f"file:{path}", text)).replace("\r\n", "\n")
        for path, text in current.items()
        if not request.POST.get(f"delete:{path}")
    }
    new_name = request.POST.get("new_file_name", "").strip()
    new_kind = request.POST.get("new_file_kind", "")
    new_text = request.POST.get("new_file_text", "").replace("\r\n", "\n")
    if new_kind == "cases.py" and new_text.strip():
        files["cases.py"] = new_text
    elif new_name and new_kind in NEW_FILE_KINDS:
        name = new_name if new_name.endswith(".py") else f"{new_name}.py"
        files[f"{new_kind}/{name}"] = new_text
    if toml:
        files["exercise.toml"] = _posted_toml(request, files.get("exercise.toml", ""))
    else:
        files["exercise.toml"] = apply_form(files.get("exercise.toml", ""), request.POST)
    return files


@login_required
@require_POST
def schedule(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    with exercise_refusals(request):
        if save_posted(request, exercise) is not None:  # the editor's changes come first
            messages.success(request, "Draft saved.")
        release_at = _posted_time(request.POST.get("release_at", ""))
        due_at = _posted_time(request.POST.get("due_at", ""))
        late_counts = bool(request.POST.get("late_counts"))
        if late_policy_changes(exercise=exercise, due_at=due_at, late_counts=late_counts):
            # Scores would change: the instructor sees whose, and confirms, first.
            schedule = Schedule(release_at, due_at, late_counts)
            return redirect(late_policy_url(exercise.module, exercise, schedule))
        authoring.exercise_schedule_set(
            exercise=exercise, release_at=release_at, due_at=due_at, late_counts=late_counts
        )
        messages.success(request, "Dates saved.")
    return redirect(author_url(exercise.module, exercise))


def _posted_time(value: str) -> datetime | None:
    """A datetime-local field's value, read as UTC (the page says so)."""
    if not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip()).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput({"dates": [f"{value!r} is not a date and time."]}) from None

"""The authoring pages (issue 14): a module's exercises (create, upload, download, members),
one exercise's editor (manifest form and TOML view, every file, statement preview, save,
validate, publish), try-as-learner and the diff between versions. Each view starts with
accounts.selectors' getter: instructors write, reviewers read, validate and try."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import module_get_reviewed, module_get_taught, module_is_taught_by
from common.errors import Conflict, DomainError, InvalidInput, NotFound
from courses import authoring, roster
from courses.models import Exercise, Module
from courses.selectors import module_objectives
from courses.services import module_export
from courses.statement import render_statement
from grader import archive
from grader.checks.registry import REGISTRY
from grader.diagnose import DIAGNOSES
from grader.spec import Package, PackageError
from submissions.services import submission_preview_create
from web.manifest_form import FormRows, ManifestFormError, apply_form, form_rows

NEW_FILE_KINDS = ("wrong", "alternatives", "cases.py")  # cases.py: function exercises


def _exercise(module: Module, slug: str) -> Exercise:
    exercise = Exercise.objects.filter(module=module, slug=slug).first()
    if exercise is None:
        raise NotFound("No such exercise in this module.")
    return exercise


def _author_url(module: Module, exercise: Exercise | None = None) -> str:
    if exercise is None:
        return reverse("web:author_module", args=[module.slug])
    return reverse("web:author_exercise", args=[module.slug, exercise.slug])


def _crumbs(module: Module, *more: tuple[str, str]) -> list[tuple[str, str]]:
    return [
        (f"Teach: {module.title}", reverse("web:teach_module", args=[module.slug])),
        ("Author", _author_url(module) if more else ""),
        *more,
    ]


def _errors(error: DomainError) -> str:
    if isinstance(error, InvalidInput):
        return " ".join(
            f"{field}: {' '.join(m) if isinstance(m, list) else m}"
            for field, m in error.errors.items()
        )
    return error.message


# -- the module ------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def author_module(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    if request.method == "POST":
        return _module_action(request, module_get_taught(slug=module_slug, user=request.user))
    exercises = module.exercises.select_related("current_version").order_by("order", "slug")
    context = {
        "module": module,
        "exercises": exercises,
        "may_edit": module_is_taught_by(module_id=module.pk, user=request.user),
        "formats": archive.FORMATS,
        "objectives": module_objectives(module),
        "members": roster.module_members(module=module),
        "crumbs": _crumbs(module),
        "nav": "teach",
    }
    return render(request, "web/author_module.html", context)


def _module_action(request: HttpRequest, module: Module) -> HttpResponse:
    action = request.POST.get("action", "")
    try:
        if action == "create-exercise":
            draft = authoring.exercise_create(
                module=module,
                slug=request.POST.get("slug", "").strip(),
                title=request.POST.get("title", "").strip(),
                kind=request.POST.get("kind", "script"),
                user=request.user,
            )
            return redirect(_author_url(module, draft.version.exercise))
        if action == "create-module":
            created = authoring.module_create(
                slug=request.POST.get("slug", "").strip(),
                title=request.POST.get("title", ""),
                user=request.user,
            )
            return redirect(_author_url(created))
        if action == "upload":
            upload = request.FILES.get("archive")
            data = upload.read(archive.DEFAULT_LIMITS.archive_bytes + 1) if upload else b""
            drafts = authoring.module_archive_upload(
                module=module, data=data, name=(upload.name if upload else "") or "upload",
                user=request.user, copy=bool(request.POST.get("copy")),
            )  # fmt: skip
            messages.success(request, f"Imported {len(drafts)} exercise(s) as drafts.")
        elif action == "objectives":
            authoring.module_objectives_set(
                module=module, objectives=objectives_from_lines(request.POST.get("objectives", ""))
            )
            messages.success(request, "Learning objectives saved.")
        elif action == "member":
            authoring.module_member_set(
                module=module,
                username=request.POST.get("username", "").strip(),
                role=request.POST.get("role", ""),
            )
            messages.success(request, "Member saved.")
        elif action == "roster-csv":
            _roster_upload(request, module)
    except InvalidInput as error:
        for problem in error.errors.get("csv", []):  # one message a line of the file
            messages.error(request, problem)
        if set(error.errors) != {"csv"}:
            messages.error(request, _errors(error))
    except (DomainError, PackageError) as error:
        text = str(error) if isinstance(error, PackageError) else _errors(error)
        messages.error(request, text)
    return redirect(_author_url(module))


def _roster_upload(request: HttpRequest, module: Module) -> None:
    upload = request.FILES.get("roster")
    data = upload.read(roster.CSV_MAX_BYTES + 1) if upload else b""
    result = roster.module_roster_import(
        module=module, data=data, create=bool(request.POST.get("create"))
    )
    created = f"; created users: {', '.join(result.created_users)}" if result.created_users else ""
    messages.success(
        request,
        f"Roster applied: {result.added} added, {result.changed} changed, "
        f"{result.unchanged} unchanged{created}.",
    )


def objectives_from_lines(text: str) -> list[dict[str, str]]:
    """The objectives form's text, one `id: title` a line (blank lines skipped); a line
    without its colon is refused, naming it."""
    objectives = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        ident, colon, title = line.partition(":")
        if not colon:
            raise InvalidInput({"objectives": [f"line {number}: write it as id: title"]})
        objectives.append({"id": ident.strip(), "title": title.strip()})
    return objectives


@login_required
@require_GET
def module_archive(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    kind = request.GET.get("type", archive.TAR_GZ)
    if kind not in archive.FORMATS:
        kind = archive.TAR_GZ
    response = HttpResponse(
        module_export(module=module, kind=kind), content_type=archive.CONTENT_TYPES[kind]
    )
    response["Content-Disposition"] = f'attachment; filename="{module.slug}.{kind}"'
    return response


# -- one exercise ------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def author_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = _exercise(module, exercise_slug)
    if request.method == "POST":
        return _exercise_action(request, module_slug, exercise)
    return _render_editor(request, module, exercise)


def _render_editor(request: HttpRequest, module: Module, exercise: Exercise) -> HttpResponse:
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
        "may_edit": module_is_taught_by(module_id=module.pk, user=request.user),
        "new_file_kinds": NEW_FILE_KINDS,
        "check_types": sorted(REGISTRY),
        "diagnoses": sorted(DIAGNOSES),
        "objectives": module_objectives(module),
        "manifest_rows": _manifest_rows(form),
        "crumbs": _crumbs(module, (exercise.title, "")),
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


def _exercise_action(request: HttpRequest, module_slug: str, exercise: Exercise) -> HttpResponse:
    action = request.POST.get("action", "")
    module = exercise.module
    if action != "validate":
        module_get_taught(slug=module_slug, user=request.user)  # the rest writes: 403
    try:
        if action == "validate":
            authoring.draft_validate(exercise=exercise, user=request.user)
            return redirect(_author_url(module, exercise) + "#validation")
        if action in ("save-form", "save-toml", "save-validate"):
            draft = authoring.draft_save(
                exercise=exercise, files=_posted_files(request, exercise), user=request.user
            )
            if draft.problem:
                messages.error(request, f"Saved as a draft, not yet valid: {draft.problem}")
            elif action == "save-validate":
                authoring.draft_validate(exercise=exercise, user=request.user)
                messages.success(request, "Saved; validation started.")
            else:
                messages.success(request, "Draft saved.")
        elif action == "publish":
            version = authoring.exercise_publish(exercise=exercise)
            messages.success(request, f"Published as v{version.number}.")
        elif action == "schedule":
            authoring.exercise_schedule_set(
                exercise=exercise,
                release_at=_posted_time(request.POST.get("release_at", "")),
                due_at=_posted_time(request.POST.get("due_at", "")),
                late_counts=bool(request.POST.get("late_counts")),
            )
            messages.success(request, "Dates saved.")
        elif action == "unpublish":
            authoring.exercise_unpublish(exercise=exercise)
            messages.success(request, "Unpublished: learners no longer see it.")
    except Conflict as error:
        messages.error(request, f"Not published: {error.message}")
    except (ManifestFormError, PackageError) as error:
        messages.error(request, str(error))
    except DomainError as error:
        messages.error(request, _errors(error))
    return redirect(_author_url(module, exercise))


def _posted_time(value: str) -> datetime | None:
    """A datetime-local field's value, read as UTC (the page says so)."""
    if not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip()).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput({"dates": [f"{value!r} is not a date and time."]}) from None


def _posted_files(request: HttpRequest, exercise: Exercise) -> dict[str, str]:
    """The draft's files as the page posted them: each file's textarea, files marked for
    deletion dropped, a new file added, and the manifest from the form or the TOML view."""
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
    toml_text = request.POST.get("toml", files.get("exercise.toml", "")).replace("\r\n", "\n")
    if request.POST.get("action") == "save-toml":
        files["exercise.toml"] = toml_text
    else:
        files["exercise.toml"] = apply_form(files.get("exercise.toml", ""), request.POST)
    return files


@login_required
@require_POST
def statement_preview(request: HttpRequest, module_slug: str, exercise_slug: str) -> JsonResponse:
    """The statement's HTML as learners would get it (the same Markdown and sanitiser)."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = _exercise(module, exercise_slug)
    text = request.POST.get("statement", "")[: archive.DEFAULT_LIMITS.file_bytes]
    return JsonResponse({"html": render_statement(_with_checks(exercise, text))})


def _with_checks(exercise: Exercise, text: str) -> str:
    """The statement with its "What is checked" section made from the saved draft's
    manifest (grader.statement), as learners get it; the text alone when the draft with
    this statement is not a valid package."""
    version = authoring.draft_of(exercise)
    if version is None:
        return text
    try:
        return Package.from_files({**version.files, "statement.md": text}).statement
    except PackageError:
        return text


@login_required
@require_GET
def validation_status(request: HttpRequest, module_slug: str, exercise_slug: str) -> JsonResponse:
    """The latest validation of the draft, rendered, for the page to show as it arrives."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = _exercise(module, exercise_slug)
    job = authoring.validation_latest(version=authoring.draft_get(exercise=exercise).version)
    if job is None:
        return JsonResponse({"status": "none", "pending": False, "html": ""})
    html = render_to_string("web/_job.html", {"job": job}, request=request)
    return JsonResponse({"status": job.status, "pending": job.pending, "html": html})


@login_required
@require_http_methods(["GET", "POST"])
def try_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """The draft as a learner sees it; a submission here is a preview that counts nowhere."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = _exercise(module, exercise_slug)
    version = authoring.draft_get(exercise=exercise).version
    if request.method == "POST":
        try:
            submission = submission_preview_create(
                user=request.user, exercise=exercise, version=version,
                code=request.POST.get("code", ""),
            )  # fmt: skip
        except DomainError as error:
            messages.error(request, _errors(error))
            return redirect("web:author_try", module.slug, exercise.slug)
        return redirect("web:submission", submission.pk)
    context = {
        "module": module,
        "exercise": exercise,
        "version": version,
        "title": version.manifest.get("title", exercise.title),
        "statement_html": mark_safe(version.statement_html),  # nh3-sanitised when saved
        "code": version.starter_code,
        "crumbs": _crumbs(module, (exercise.title, _author_url(module, exercise)), ("Try", "")),
        "nav": "teach",
    }
    return render(request, "web/author_try.html", context)


@login_required
@require_GET
def version_diff(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = _exercise(module, exercise_slug)
    old_label, new_label = request.GET.get("from", "current"), request.GET.get("to", "draft")
    old = authoring.version_get(exercise=exercise, label=old_label)
    new = authoring.version_get(exercise=exercise, label=new_label)
    context: dict[str, Any] = {
        "module": module,
        "exercise": exercise,
        "old": old,
        "new": new,
        "diffs": authoring.versions_diff(old, new),
        "crumbs": _crumbs(module, (exercise.title, _author_url(module, exercise)), ("Diff", "")),
        "nav": "teach",
    }
    return render(request, "web/author_diff.html", context)

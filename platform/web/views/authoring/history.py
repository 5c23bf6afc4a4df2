"""Restoring an earlier draft or published version of an exercise as its current draft,
from the author page's History (authoring.history). The first post shows what would change
and asks to confirm; only a post with confirmed=yes restores. Instructors only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from authoring import history
from authoring import services as authoring
from common.errors import DomainError
from courses.models import Exercise
from web.views.authoring.base import author_url, crumbs, error_text, exercise_for


@login_required
@require_POST
def restore_draft(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    back = author_url(exercise.module, exercise) + "#history"
    ref = request.POST.get("version", "")
    try:
        if request.POST.get("confirmed") != "yes":
            return _confirm(request, exercise, ref, cancel_url=back)
        result = history.draft_restore(exercise=exercise, ref=ref, user=request.user)
    except DomainError as error:
        messages.error(request, f"Not restored: {error_text(error)}")
        return redirect(back)
    messages.success(request, history.restored_message(result))
    return redirect(author_url(exercise.module, exercise))


def _confirm(
    request: HttpRequest, exercise: Exercise, ref: str, *, cancel_url: str
) -> HttpResponse:
    """What the restore would do: the current draft's files against the restored ones."""
    restored = authoring.version_get(exercise=exercise, label=ref)
    current = authoring.draft_get(exercise=exercise).version
    module = exercise.module
    context = {
        "module": module,
        "exercise": exercise,
        "restored": restored,
        "current": current,
        "ref": ref,
        "same": restored.pk == current.pk,
        "diffs": authoring.versions_diff(current, restored),
        "cancel_url": cancel_url,
        "crumbs": crumbs(module, (exercise.title, author_url(module, exercise)), ("Restore", "")),
        "nav": "teach",
    }
    return render(request, "web/author_restore.html", context)

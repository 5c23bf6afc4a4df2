"""An attempt compared with another of the same learner's, or with their unsent draft: a
diff server-rendered as a table, each changed line marked in words as well as colour."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from submissions.compare import DIFF_MAX_LINES, attempt_comparison


@login_required
@require_GET
def compare_attempts(request: HttpRequest, submission_id: int) -> HttpResponse:
    comparison = attempt_comparison(
        user=request.user, submission_id=submission_id, other=request.GET.get("with")
    )
    submission = comparison.submission
    exercise = submission.exercise
    context = {
        "c": comparison,
        "exercise": exercise,
        "max_lines": DIFF_MAX_LINES,
        "crumbs": [
            (exercise.module.title, reverse("web:module", args=[exercise.module.slug])),
            (exercise.title, reverse("web:exercise", args=[exercise.module.slug, exercise.slug])),
            (f"Submission #{submission.pk}", reverse("web:submission", args=[submission.pk])),
            ("Compare", ""),
        ],
        "nav": "learn",
    }
    return render(request, "web/compare.html", context)

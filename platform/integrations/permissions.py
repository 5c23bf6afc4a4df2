"""Course tokens reach only their course, with only their scopes (403 otherwise).

A view says which scope each method needs with `course_token_scopes = {"GET": "..."}` and
which course it touches with `course_token_module(request) -> module id | None`. The
endpoints of api/ (which predate course tokens) are described here by URL name. A view
that says nothing refuses course tokens: the rule fails closed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from courses.models import Exercise
from integrations import tokens
from integrations.tokens import CourseGrant, teaches
from submissions.models import Submission

READ_METHODS = ("GET", "HEAD", "OPTIONS")


def _exercise_module(request: Request, view: Any) -> int | None:
    slug = view.kwargs.get("slug")
    return Exercise.objects.filter(slug=slug).values_list("module_id", flat=True).first()


def _submission_module(request: Request, view: Any) -> int | None:
    pk = view.kwargs.get("pk")
    found = Submission.objects.filter(pk=pk).values_list("exercise__module_id", flat=True)
    return found.first()


def _posted_exercise_module(request: Request, view: Any) -> int | None:
    data = request.data
    slug = data.get("exercise") if isinstance(data, dict) else None
    if not isinstance(slug, str):
        return None  # the view answers 400 for it
    return Exercise.objects.filter(slug=slug).values_list("module_id", flat=True).first()


def _no_module(request: Request, view: Any) -> int | None:
    return None


ModuleOf = Callable[[Request, Any], "int | None"]
# url name -> {method: (scope, how to find the course the request touches)}
API_V1_RULES: dict[str, dict[str, tuple[str, ModuleOf]]] = {
    "exercise-list": {"GET": (tokens.EXERCISES_READ, _no_module)},
    "exercise-detail": {"GET": (tokens.EXERCISES_READ, _exercise_module)},
    "submission-list": {"POST": (tokens.SUBMISSIONS_WRITE, _posted_exercise_module)},
    "submission-detail": {"GET": (tokens.SUBMISSIONS_READ, _submission_module)},
}


class CourseTokenScope(BasePermission):
    message = "This course token may not do that."

    def has_permission(self, request: Request, view: Any) -> bool:
        grant = request.auth
        if not isinstance(grant, CourseGrant):
            return True  # not a course token: the other rules apply
        rule = _rule(request, view)
        if rule is None:
            self.message = "Course tokens cannot be used on this endpoint."
            return False
        scope, module_of = rule
        if not grant.allows(scope):
            self.message = f"This token lacks the {scope!r} scope."
            return False
        module_id = module_of(request, view)
        if module_id is not None and module_id != grant.module_id:
            self.message = "This token belongs to another course."
            return False
        if not teaches(request.user, grant.module_id):
            self.message = "The token's creator no longer teaches this course."
            return False
        return True


def _rule(request: Request, view: Any) -> tuple[str, ModuleOf] | None:
    method = "GET" if request.method in READ_METHODS else (request.method or "")
    declared = getattr(view, "course_token_scopes", None)
    if declared is not None:
        scope = declared.get(method)
        module_of = getattr(view, "course_token_module", None)
        if scope is None or module_of is None:
            return None
        return scope, lambda request, view: module_of(request)
    match = getattr(request, "resolver_match", None)
    url_name = match.url_name if match is not None else None
    return API_V1_RULES.get(url_name or "", {}).get(method)

"""A learner's unsent code, kept on the server per learner and exercise: the exercise page
posts it as they type, and opens with it when it is newer than their last submission, on
any device and in any session."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from accounts.selectors import AnyUser
from common.errors import Forbidden, InvalidInput
from common.text import NOT_TEXT, has_lone_surrogate
from courses.models import Exercise
from submissions.models import Draft, Submission


def draft_code_validate(code: object) -> str:
    """Like a submission's code, but it may be empty (a learner may clear the editor)."""
    if not isinstance(code, str):
        raise InvalidInput({"code": ["Code must be a string."]})
    if "\x00" in code:
        raise InvalidInput({"code": ["Code must not contain NUL bytes."]})
    if has_lone_surrogate(code):
        raise InvalidInput({"code": [f"Code: {NOT_TEXT}"]})
    size = len(code.encode("utf-8"))
    limit = settings.GRADLAB_CODE_MAX_BYTES
    if size > limit:
        raise InvalidInput({"code": [f"Code is {size} bytes; the limit is {limit} bytes."]})
    return code


def draft_save(*, learner: AnyUser, exercise: Exercise, code: object) -> Draft:
    """Keeps `code` as the learner's draft of `exercise`. The caller checked that they
    may see the exercise."""
    if not learner.is_authenticated:
        raise Forbidden("Sign in to keep a draft.")
    # A form posts line breaks as CRLF; the editor's text has LF only.
    code = draft_code_validate(code).replace("\r\n", "\n")
    draft, _ = Draft.objects.update_or_create(
        learner_id=learner.pk,
        exercise=exercise,
        defaults={"code": code, "updated_at": timezone.now()},
    )
    return draft


def draft_get(*, learner: AnyUser, exercise: Exercise) -> Draft | None:
    return Draft.objects.filter(learner_id=learner.pk, exercise=exercise).first()


def draft_to_open(*, draft: Draft | None, latest: Submission | None) -> Draft | None:
    """The draft, when the editor should open with it: newer than the last submission."""
    if draft is None:
        return None
    if latest is not None and (latest.created_at >= draft.updated_at or latest.code == draft.code):
        return None
    return draft


def draft_delete(*, learner: AnyUser, exercise: Exercise) -> bool:
    """Drops the learner's draft of `exercise` (the page then opens with their last
    submission, or the starter); False when there was none."""
    deleted, _ = Draft.objects.filter(learner_id=learner.pk, exercise=exercise).delete()
    return deleted > 0

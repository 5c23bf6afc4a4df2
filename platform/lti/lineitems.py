"""Line items (AGS). Due dates from the LMS: after a launch, the line item of the link is
read from the platform, and its endDateTime, when present, becomes the exercise's due date in
that course context (ExerciseLink.due_at). Scores of submissions made after it are posted with
their submission time.

A link launched without a line item (a Canvas module link, a Moodle activity that does not
accept grades) gets one when the platform granted the `lineitem` scope and gave its
`lineitems` URL (django-lti keeps both on the context): gradlab creates it, with the
exercise's points, title, resource link, slug as tag and due date, before the first score."""

from __future__ import annotations

import json
import logging
from datetime import datetime

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from lti_tool.models import LtiRegistration
from pylti1p3.exception import LtiServiceException

from common.jobs import task_send
from integrations import egress
from lti.compat import ServiceConnector, registration_of
from lti.models import ExerciseLink

logger = logging.getLogger(__name__)

LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"


class LineItemRefused(Exception):
    """The platform would not create the line item: its HTTP status (None: no answer)."""

    def __init__(self, status_code: int | None, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


def lineitem_body(link: ExerciseLink) -> dict[str, object]:
    """The line item gradlab asks for: the exercise's points, the link's title, the link,
    the exercise's slug as tag, and the due date known here (the link's, else the
    exercise's) as endDateTime."""
    exercise = link.exercise
    body: dict[str, object] = {
        "scoreMaximum": float(exercise.points),
        "label": link.resource_link.title or exercise.title,
        "resourceLinkId": link.resource_link.id_on_platform,
        "tag": exercise.slug,
    }
    due_at = link.due_at or exercise.due_at
    if due_at is not None:
        body["endDateTime"] = due_at.isoformat()
    return body


def lineitem_creatable(link: ExerciseLink) -> bool:
    """A link without a line item whose platform lets the tool create one."""
    context = link.resource_link.context
    return not link.lineitem_url and context.can_manage_lineitems and bool(context.lineitems_url)


def lineitem_ensure(*, link_id: int) -> str:
    """The link's line item URL, created on the platform first when the link has none
    (the link's row is locked meanwhile: one line item per link, however many workers).
    Raises LineItemRefused when the platform refuses or does not answer."""
    with transaction.atomic():
        link = (
            ExerciseLink.objects.select_for_update(of=("self",))
            .select_related("resource_link__context", "exercise")
            .get(pk=link_id)
        )
        if link.lineitem_url:
            return link.lineitem_url
        if not lineitem_creatable(link):
            raise LineItemRefused(None, "the platform gave no line item and no right to create one")
        url = _lineitem_create(link)
        ExerciseLink.objects.filter(pk=link.pk).update(lineitem_url=url)
    return url


def _lineitem_create(link: ExerciseLink) -> str:
    context = link.resource_link.context
    registration = LtiRegistration.objects.get(deployments__contexts=context)
    connector = ServiceConnector(registration_of(registration))
    try:
        answer = connector.make_service_request(
            [LINEITEM_SCOPE], context.lineitems_url, is_post=True,
            data=json.dumps(lineitem_body(link)), content_type=LINEITEM_TYPE,
            accept=LINEITEM_TYPE,
        )  # fmt: skip
    except LtiServiceException as error:
        status = error.response.status_code
        raise LineItemRefused(status, f"line item not created: {error}"[:500]) from error
    except requests.RequestException as error:  # no answer, or refused by the egress guard
        said = egress.failure_text(error)
        raise LineItemRefused(None, f"line item not created: {said}") from error
    except Exception as error:  # the token refused
        raise LineItemRefused(None, f"line item not created: {error}"[:500]) from error
    body = answer["body"] if isinstance(answer["body"], dict) else {}
    url = body.get("id")
    if not isinstance(url, str) or not url:
        raise LineItemRefused(None, "the platform created a line item without an id")
    return url


def lineitem_sync(*, link_id: int) -> datetime | None:
    """Reads the link's line item; stores and returns its end date (None: no due date)."""
    link = ExerciseLink.objects.select_related("resource_link__context").get(pk=link_id)
    if not link.lineitem_url:
        return None
    registration = LtiRegistration.objects.get(deployments__contexts=link.resource_link.context)
    connector = ServiceConnector(registration_of(registration))
    try:
        answer = connector.make_service_request(
            [LINEITEM_READ_SCOPE], link.lineitem_url, accept=LINEITEM_TYPE
        )
    except (LtiServiceException, requests.RequestException) as error:
        logger.warning("line item %s could not be read: %s", link.lineitem_url, error)
        return link.due_at
    body = answer["body"] if isinstance(answer["body"], dict) else {}
    end = body.get("endDateTime")
    due_at = parse_datetime(end) if isinstance(end, str) else None
    ExerciseLink.objects.filter(pk=link.pk).update(
        due_at=due_at, lineitem_checked_at=timezone.now()
    )
    return due_at


def lineitem_stale(link: ExerciseLink) -> bool:
    """Read again at most every GRADLAB_LTI_LINEITEM_REFRESH_SECONDS."""
    if not link.lineitem_url:
        return False
    if link.lineitem_checked_at is None:
        return True
    age = (timezone.now() - link.lineitem_checked_at).total_seconds()
    return age > settings.GRADLAB_LTI_LINEITEM_REFRESH_SECONDS


def lineitem_enqueue(*, link_id: int) -> None:
    try:
        task_send("gradlab.lti_sync_lineitem", args=[link_id], queue=settings.GRADLAB_QUEUE_CPU)
    except Exception:
        logger.exception("could not enqueue the line item sync of link %s", link_id)

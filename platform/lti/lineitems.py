"""Due dates from the LMS: after a launch, the line item of the link is read from the
platform (AGS), and its endDateTime, when present, becomes the exercise's due date in that
course context (ExerciseLink.due_at). Scores of submissions made after it are posted with
their submission time and marked late."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from lti_tool.models import LtiRegistration
from pylti1p3.exception import LtiServiceException

from lti.compat import ServiceConnector, registration_of
from lti.models import ExerciseLink

logger = logging.getLogger(__name__)

LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"


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
    except LtiServiceException as error:
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
    from lti.tasks import sync_lineitem

    try:
        sync_lineitem.apply_async(args=[link_id], queue=settings.GRADLAB_QUEUE_CPU)
    except Exception:
        logger.exception("could not enqueue the line item sync of link %s", link_id)

"""Deployments a registered platform makes after its registration (a Canvas install, a
second Moodle tool of the same registration): recorded at their first launch, whose id_token
the platform has signed, so that a registration by one URL (lti.registration) needs nothing
more. A deployment the operator deactivated stays refused, and
GRADLAB_LTI_ACCEPT_NEW_DEPLOYMENTS = false refuses every deployment not registered by hand.
A new deployment opens nothing by itself: its courses still need a binding (lti.bindings)."""

from __future__ import annotations

import logging

from django.conf import settings
from lti_tool.models import LtiDeployment, LtiRegistration

logger = logging.getLogger(__name__)


def deployment_accept(*, issuer: str, client_id: str, deployment_id: str) -> LtiDeployment | None:
    """The deployment a genuine launch names: the known one, or a new one recorded now;
    None when it is refused (unknown and not accepted, or deactivated)."""
    registration = LtiRegistration.objects.filter(
        issuer=issuer, client_id=client_id, is_active=True
    ).first()
    if registration is None or not deployment_id:
        return None
    known = LtiDeployment.objects.filter(
        registration=registration, deployment_id=deployment_id
    ).first()
    if known is not None:
        return known if known.is_active else None
    if not settings.GRADLAB_LTI_ACCEPT_NEW_DEPLOYMENTS:
        return None
    deployment, created = LtiDeployment.objects.get_or_create(
        registration=registration,
        deployment_id=deployment_id[:255],
        defaults={"is_active": True},
    )
    if created:
        logger.info("lti: new deployment %s of %s recorded at its first launch",
                    deployment_id, registration)  # fmt: skip
    return deployment if deployment.is_active else None

"""Deep Linking: an instructor, launched from the LMS's "add content" dialog, picks gradlab
exercises; the tool answers with a signed LtiDeepLinkingResponse holding one LTI resource
link per exercise (the `exercise` custom parameter) with a line item (its points), which
the LMS turns into assignments. Offered: the exercises of the modules bound to the LMS
course, and of the modules the instructor already teaches in gradlab; a response with the
latter binds the course to their module (lti.bindings)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q, QuerySet
from lti_tool.models import LtiLaunch
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem

from courses.models import Exercise, Module
from courses.selectors import exercise_list
from integrations import egress
from lti.bindings import binding_create, context_id_of, modules_of_launch, modules_taught_in_gradlab
from lti.compat import GradlabMessageLaunch, ToolConfig, service_origins
from lti.models import ContextBinding
from lti.oidc import CookielessCacheStorage

SESSION_KEY = "gradlab_lti_deep_link"
SETTINGS_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
CANVAS_CLOUD_ORIGINS = frozenset(
    egress.origin_of(f"https://canvas.{zone}instructure.com") for zone in ("", "beta.", "test.")
)


class DeepLinkError(Exception):
    """The deep linking session is gone or the selection is unusable: said plainly."""


def offered_modules(lti_launch: LtiLaunch, user: User) -> QuerySet[Module]:
    """The bound modules of the launch's course, and those `user` already teaches."""
    if not context_id_of(lti_launch):
        return Module.objects.none()
    # Two subqueries OR-ed, not a UNION: SQLite refuses the ordered querysets' UNION.
    bound = modules_of_launch(lti_launch).order_by().values("pk")
    taught = modules_taught_in_gradlab(user).order_by().values("pk")
    return Module.objects.filter(Q(pk__in=bound) | Q(pk__in=taught))


def choices(lti_launch: LtiLaunch, user: User) -> QuerySet[Exercise]:
    return exercise_list().filter(module__in=offered_modules(lti_launch, user))


def return_url_of(launch: GradlabMessageLaunch) -> str:
    """The signed deep_link_return_url, checked (checked_return_url) and on the platform
    that signed it (return_url_is_the_platforms); DeepLinkError if the platform sent none,
    one that is not a plain https address, or one elsewhere."""
    settings_claim = launch.get_launch_data().get(SETTINGS_CLAIM)
    raw = settings_claim.get("deep_link_return_url") if isinstance(settings_claim, dict) else None
    url = checked_return_url(raw)
    registration = launch.get_registration()
    if registration is None or not return_url_is_the_platforms(
        url, service_origins(registration), str(registration.get_issuer() or "")
    ):
        raise DeepLinkError(
            "The LMS asked for the selection to go to an address that is not its own: "
            "start it again from your LMS."
        )
    return url


def return_url_is_the_platforms(url: str, origins: frozenset[str], issuer: str) -> bool:
    """Whether `url` is on one of the registration's origins (its issuer, login, token and
    key set URLs, and GRADLAB_LTI_SERVICE_ORIGINS' for it), or, for Canvas Cloud, on an
    institution's https subdomain of instructure.com (Canvas signs the school's domain)."""
    if egress.origin_of(url) in origins:
        return True
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return (
        egress.origin_of(issuer) in CANVAS_CLOUD_ORIGINS
        and parts.scheme == "https"
        and host.endswith(".instructure.com")
    )


def accepts_several(launch: GradlabMessageLaunch) -> bool:
    """Whether the platform takes several items in one answer: false only when its
    deep_linking_settings say `accept_multiple: false` (Canvas's assignment selection
    does), so that the picker offers one choice and the answer carries one item."""
    settings_claim = launch.get_launch_data().get(SETTINGS_CLAIM)
    return not (isinstance(settings_claim, dict) and settings_claim.get("accept_multiple") is False)


def checked_return_url(raw: object) -> str:
    """The return URL if it is an absolute https URL with a plain host (no user, no
    quotes, blanks or control characters; http too only with GRADLAB_LTI_ALLOW_HTTP, for
    test platforms on this machine). The host is not pinned to the registration's URLs:
    Canvas signs its institution's own domain, not canvas.instructure.com. The URL is
    signed by the registered platform; this keeps javascript:, data: and look-alikes out
    of the page's form and its Content-Security-Policy."""
    refused = "The LMS sent no usable address to return the selection to: start it again."
    if not isinstance(raw, str) or any(ord(c) < 0x21 or c in "'\"<>\\;" for c in raw):
        raise DeepLinkError(refused)
    parts = urlsplit(raw)
    allowed = {"https", "http"} if settings.GRADLAB_LTI_ALLOW_HTTP else {"https"}
    try:
        port = parts.port
    except ValueError:
        raise DeepLinkError(refused) from None
    if parts.scheme not in allowed or not parts.hostname or parts.username or port == 0:
        raise DeepLinkError(refused)
    return raw


def restore(request: Any, launch_id: str) -> GradlabMessageLaunch:
    try:
        restored = GradlabMessageLaunch.from_cache(
            launch_id, request, ToolConfig(), launch_data_storage=CookielessCacheStorage()
        )
    except LtiException:
        message = "This content selection has expired: start it again in your LMS."
        raise DeepLinkError(message) from None
    assert isinstance(restored, GradlabMessageLaunch)
    return restored


def resources_for(exercises: Sequence[Exercise], launch_url: str) -> list[DeepLinkResource]:
    return [
        DeepLinkResource()
        .set_url(launch_url)
        .set_title(exercise.title)
        .set_custom_params({"exercise": exercise.slug})
        .set_lineitem(
            LineItem()
            .set_label(exercise.title)
            .set_score_maximum(float(exercise.points))
            .set_resource_id(exercise.slug)
            .set_tag("gradlab")
        )
        for exercise in exercises
    ]


def response_jwt(
    launch: GradlabMessageLaunch, user: User, slugs: Sequence[str], launch_url: str
) -> str:
    """The signed LtiDeepLinkingResponse for the exercises `slugs`, in course order; the
    course is bound to their modules."""
    lti_launch = LtiLaunch(launch)
    picked = list(choices(lti_launch, user).filter(slug__in=list(slugs)))
    if not picked or len(picked) != len(set(slugs)):
        raise DeepLinkError("Pick at least one exercise from the list.")
    if len(picked) > 1 and not accepts_several(launch):
        raise DeepLinkError("Your LMS takes one exercise here: pick one.")
    with transaction.atomic():
        for module_id in {exercise.module_id for exercise in picked}:
            binding_create(
                deployment=lti_launch.deployment,
                context_id=context_id_of(lti_launch),
                module=Module.objects.get(pk=module_id),
                origin=ContextBinding.Origin.DEEP_LINK,
                by=user,
            )
    return str(launch.get_deep_link().get_response_jwt(resources_for(picked, launch_url)))


ANSWER_PREFIX = "lti-deep-link-answer:"


def answer_keep(return_url: str, jwt: str) -> str:
    """Keeps a signed answer for the LMS's frame to fetch once (a selection made in a new
    window goes back through the frame: Moodle's dialog expects it there), for minutes."""
    token = secrets.token_urlsafe(32)
    kept = {"return_url": return_url, "jwt": jwt}
    cache.set(_answer_key(token), kept, timeout=settings.GRADLAB_LTI_TICKET_SECONDS)
    return token


def answer_take(token: str) -> dict[str, str] | None:
    found = cache.get(_answer_key(token))
    if not isinstance(found, dict) or not cache.delete(_answer_key(token)):
        return None
    return found


def _answer_key(token: str) -> str:
    return ANSWER_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def origin_of(url: str) -> str:
    """scheme://host[:port] of a checked URL, rebuilt from its parsed parts (never its
    text): what a Content-Security-Policy header may name."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")

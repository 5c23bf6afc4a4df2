"""The tool's signing keys (django-lti's Key model), rotated so that a platform never sees
a signature it cannot check: a new key is published in the JWKS at once but signs only
after GRADLAB_LTI_KEY_PUBLISH_SECONDS (longer than platforms cache a key set); the key it
replaces stays published until GRADLAB_LTI_KEY_RETIRE_SECONDS after that, then leaves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from lti_tool.models import Key


class NoKey(Exception):
    """No active key: run `manage.py lti_rotate_keys` once."""


def _publish_lead() -> timedelta:
    return timedelta(seconds=settings.GRADLAB_LTI_KEY_PUBLISH_SECONDS)


def signing_key(now: datetime | None = None) -> Key:
    """The newest active key published for long enough; on a fresh install (no key that
    old yet), the oldest active key."""
    now = now or timezone.now()
    active = Key.objects.filter(is_active=True)
    ready = active.filter(datetime_created__lte=now - _publish_lead())
    key = (
        ready.order_by("-datetime_created", "-id").first()
        or active.order_by("datetime_created", "id").first()
    )
    if key is None:
        raise NoKey("The LTI tool has no signing key: run `manage.py lti_rotate_keys`.")
    return key


def jwks() -> dict[str, Any]:
    """Every active key: the one signing, and any that will sign or just stopped."""
    return {"keys": [key.as_jwk() for key in Key.objects.filter(is_active=True).order_by("id")]}


@dataclass(frozen=True)
class Rotation:
    created: Key
    retired: int


def keys_rotate(now: datetime | None = None) -> Rotation:
    """Creates the next key (published now, signing later) and retires keys that no longer
    sign and were replaced long enough ago."""
    now = now or timezone.now()
    with transaction.atomic():
        retired = keys_retire(now)
        created = Key.objects.generate()
    return Rotation(created=created, retired=retired)


def keys_rotate_if_due(now: datetime | None = None) -> Rotation | None:
    """The scheduler's rotation (hourly): a new key once the newest active key is
    GRADLAB_LTI_KEY_ROTATE_SECONDS old (or there is none), and replaced keys retired as
    they come due. Running it again before then changes nothing but retirements."""
    now = now or timezone.now()
    newest = Key.objects.filter(is_active=True).order_by("-datetime_created", "-id").first()
    period = timedelta(seconds=settings.GRADLAB_LTI_KEY_ROTATE_SECONDS)
    if newest is not None and now - newest.datetime_created < period:
        keys_retire(now)
        return None
    return keys_rotate(now)


def keys_retire(now: datetime) -> int:
    try:
        current = signing_key(now)
    except NoKey:
        return 0
    became_signing = current.datetime_created + _publish_lead()
    retire_after = timedelta(seconds=settings.GRADLAB_LTI_KEY_RETIRE_SECONDS)
    if now < became_signing + retire_after:
        return 0
    older = Key.objects.filter(is_active=True, datetime_created__lt=current.datetime_created)
    return older.update(is_active=False)


def keys_ensure() -> Key:
    """At least one key exists (the first run of a fresh install)."""
    key = Key.objects.filter(is_active=True).first()
    return key if key is not None else Key.objects.generate()

"""The tool's keys: the JWKS publishes a new key before the tool signs with it, and keeps
the replaced one published a while after."""

from __future__ import annotations

from datetime import timedelta
from typing import Any


def _kids(jwks: dict[str, Any]) -> set[str]:
    return {key["kid"] for key in jwks["keys"]}


def _age(key: Any, seconds: float) -> None:
    from lti_tool.models import Key

    Key.objects.filter(pk=key.pk).update(
        datetime_created=key.datetime_created - timedelta(seconds=seconds)
    )


def test_a_new_key_is_published_at_once_but_signs_only_after_the_publish_lead(
    db: None, client: Any, settings: Any
) -> None:
    from django.utils import timezone

    from lti.keys import keys_ensure, keys_rotate, signing_key

    settings.GRADLAB_LTI_KEY_PUBLISH_SECONDS = 3600
    old = keys_ensure()
    _age(old, 7200)

    new = keys_rotate().created
    published = client.get("/lti/jwks.json").json()

    assert _kids(published) == {str(old), str(new)}
    assert signing_key().pk == old.pk
    assert signing_key(timezone.now() + timedelta(seconds=3601)).pk == new.pk


def test_a_replaced_key_leaves_the_jwks_only_after_the_retire_delay(
    db: None, client: Any, settings: Any
) -> None:
    from lti.keys import keys_ensure, keys_rotate

    settings.GRADLAB_LTI_KEY_PUBLISH_SECONDS = 3600
    settings.GRADLAB_LTI_KEY_RETIRE_SECONDS = 3600
    old = keys_ensure()
    _age(old, 10 * 3600)
    new = keys_rotate().created
    _age(new, 3600 + 1800)  # signing for half the retire delay

    keep = keys_rotate()
    _age(new, 3600 + 3600 + 1)  # now past it
    gone = keys_rotate()

    assert keep.retired == 0
    assert gone.retired == 1
    kids = _kids(client.get("/lti/jwks.json").json())
    assert str(old) not in kids and str(new) in kids


def test_the_jwks_lists_public_keys_only(db: None, client: Any) -> None:
    from lti.keys import keys_ensure

    keys_ensure()

    [key] = client.get("/lti/jwks.json").json()["keys"]

    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(key)


def test_a_fresh_install_makes_its_first_key_when_it_first_signs(db: None) -> None:
    from lti_tool.models import Key
    from pylti1p3.registration import Registration

    from lti.compat import with_signing_key

    registration = with_signing_key(Registration())

    assert Key.objects.count() == 1
    assert registration.get_kid() == str(Key.objects.get())

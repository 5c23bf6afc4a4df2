"""A signed id_token whose claims have the wrong type (roles holding a non-string, context
or custom not an object) is a 400 naming the claim, before anything reads it: no 500, and
nobody signed in or enrolled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

LTI = "https://purl.imsglobal.org/spec/lti/claim/"

pytestmark = pytest.mark.django_db


def _refused_naming(flow: Any, claim: str) -> None:
    from accounts.models import Enrollment

    assert flow.response.status_code == 400, flow.response.content[:300]
    assert f"{LTI}{claim}" in flow.response.content.decode()
    assert "_auth_user_id" not in flow.response.wsgi_request.session
    assert not Enrollment.objects.exists()


@pytest.mark.parametrize("roles", [[1], [None], ["x", {"role": "Instructor"}], "Instructor"])
def test_a_roles_claim_that_is_not_a_list_of_strings_is_a_400_naming_it(
    launch: Callable[..., Any], roles: Any
) -> None:
    _refused_naming(launch(roles=roles), "roles")


@pytest.mark.parametrize("claim", ["context", "custom"])
@pytest.mark.parametrize("value", ["a string", ["a", "list"], 7])
def test_a_claim_that_must_be_an_object_but_is_not_is_a_400_naming_it(
    launch: Callable[..., Any], claim: str, value: Any
) -> None:
    _refused_naming(launch(**{f"{LTI}{claim}": value}), claim)


def test_a_context_whose_id_is_not_a_string_is_a_400_naming_the_context(
    launch: Callable[..., Any],
) -> None:
    _refused_naming(launch(**{f"{LTI}context": {"id": ["course-7"]}}), "context")


def test_well_formed_claims_still_launch(launch: Callable[..., Any]) -> None:
    assert launch().response.status_code == 302


@pytest.mark.parametrize(
    ("claims", "named"),
    [
        ({"email": "a" * 250 + "@example.org"}, "email"),
        ({"sub": "s" * 256}, "sub"),
        ({"name": "n" * 501}, "name"),
        ({f"{LTI}context": {"id": "course-7", "title": "t" * 501}}, f"{LTI}context"),
        ({f"{LTI}resource_link": {"id": "r" * 256}}, f"{LTI}resource_link"),
        ({f"{LTI}tool_platform": {"guid": "g" * 256}}, f"{LTI}tool_platform"),
        ({"given_name": ["Ada"]}, "given_name"),
    ],
    ids=["email", "sub", "name", "context-title", "resource-link-id", "platform-guid", "list"],
)
def test_a_stored_claim_too_long_or_not_a_string_is_a_400_naming_it_not_a_500(
    launch: Callable[..., Any], claims: dict[str, Any], named: str
) -> None:
    from accounts.models import Enrollment

    flow = launch(**claims)

    assert flow.response.status_code == 400, flow.response.content[:300]
    assert named in flow.response.content.decode()
    assert not Enrollment.objects.exists()

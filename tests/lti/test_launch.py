"""LTI 1.3 launches from the fake platform: OIDC login initiation, the id_token checked
(signature by kid, iss, aud, exp with skew, single-use nonce, state, deployment), and what a
good launch makes in gradlab: user, enrolment with its role, the link to the exercise, the
exercise page."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fake_platform import COURSE_ID, INSTRUCTOR, FakePlatform, new_key


def test_login_initiation_redirects_to_the_platform_with_state_nonce_and_our_launch_url(
    launch: Callable[..., Any],
) -> None:
    flow = launch()

    query = parse_qs(urlsplit(flow.login["Location"]).query)
    assert query["scope"] == ["openid"] and query["response_type"] == ["id_token"]
    assert query["response_mode"] == ["form_post"] and query["prompt"] == ["none"]
    assert query["redirect_uri"] == ["http://testserver/lti/launch/"]
    assert query["state"][0] and query["nonce"][0]
    assert query["login_hint"] == ["learner-1"]


def test_a_learner_launch_signs_in_enrols_links_and_lands_on_the_exercise(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.contrib.auth.models import User

    from accounts.models import Enrollment
    from lti.models import ExerciseLink, GradeTarget

    flow = launch()

    assert flow.response.status_code == 302
    assert flow.response["Location"] == "/modules/autograd-backprop/first-gradient/"
    user = User.objects.get(lti_users__sub="learner-1")
    assert (user.first_name, user.last_name) == ("Ada", "Lovelace")
    assert Enrollment.objects.get(user=user).role == "learner"
    link = ExerciseLink.objects.get()
    assert link.exercise.slug == "first-gradient"
    assert link.lineitem_url == platform.lineitem_url(1)
    assert GradeTarget.objects.get(user=user).sub == "learner-1"


def test_the_session_of_a_launch_opens_the_exercise_page(launch: Callable[..., Any]) -> None:
    from django.test import Client

    browser = Client()
    flow = launch(client=browser)

    page = browser.get(flow.response["Location"])

    assert page.status_code == 200


def test_the_login_url_without_a_registration_id_finds_it_by_issuer_and_client_id(
    launch: Callable[..., Any],
) -> None:
    flow = launch(login_url="/lti/login/")

    assert flow.response.status_code == 302
    assert flow.response["Location"].endswith("/first-gradient/")


def test_two_registrations_sharing_an_issuer_are_told_apart_by_client_id(
    launch: Callable[..., Any], registration: Any, platform: FakePlatform, catalog: Any
) -> None:
    from django.contrib.auth.models import User
    from lti_tool.models import LtiDeployment, LtiRegistration

    from lti.models import ContextBinding

    other = LtiRegistration.objects.create(
        name="Another Canvas", issuer=registration.issuer, client_id="another-canvas",
        auth_url=platform.auth_url, token_url=platform.token_url,
        keyset_url=platform.keyset_url,
    )  # fmt: skip
    deployment = LtiDeployment.objects.create(registration=other, deployment_id="deployment-1",
                                              is_active=True)  # fmt: skip
    ContextBinding.objects.create(deployment=deployment, context_id=COURSE_ID,
                                  module=catalog, origin="operator")  # fmt: skip

    first = launch()
    second = launch(client_id="another-canvas", login_url=f"/lti/login/{other.uuid}/")

    assert first.response.status_code == second.response.status_code == 302
    registrations = set(
        User.objects.filter(lti_users__sub="learner-1").values_list(
            "lti_users__registration__client_id", flat=True
        )
    )
    assert registrations == {"gradlab-tool-1", "another-canvas"}


def test_a_second_launch_finds_the_same_user(launch: Callable[..., Any]) -> None:
    from django.contrib.auth.models import User

    launch()
    launch()

    assert User.objects.filter(lti_users__sub="learner-1").count() == 1


def test_an_instructor_launch_enrols_as_instructor_with_no_grade_target(
    launch: Callable[..., Any],
) -> None:
    from accounts.models import Enrollment
    from lti.models import GradeTarget

    flow = launch(sub="teacher-1", roles=[INSTRUCTOR])

    assert flow.response.status_code == 302
    assert Enrollment.objects.get(user__lti_users__sub="teacher-1").role == "instructor"
    assert not GradeTarget.objects.exists()


def test_a_link_to_an_unknown_exercise_is_a_clear_404(launch: Callable[..., Any]) -> None:
    flow = launch(exercise="no-such-exercise")

    assert flow.response.status_code == 404
    assert b"no gradlab exercise" in flow.response.content


def _resign(platform: FakePlatform, **changes: Any) -> Callable[[dict[str, Any]], None]:
    """A tamper that re-signs the platform's claims with `changes` (None removes one)."""

    def tamper(answer: dict[str, Any]) -> None:
        claims = {**answer["claims"], **changes}
        answer["id_token"] = platform.sign({k: v for k, v in claims.items() if v is not None})

    return tamper


BAD_LAUNCHES: dict[str, tuple[Callable[[FakePlatform], Any], str]] = {
    "expired": (
        lambda p: _resign(p, exp=int(time.time()) - 600, iat=int(time.time()) - 900),
        "Signature has expired",
    ),
    "wrong audience": (
        lambda p: _resign(p, aud="another-tool"),
        "issuer did not start this sign-in",  # the sign-in was for another client id
    ),
    "wrong issuer": (
        lambda p: _resign(p, iss="https://evil.example.test"),
        "issuer did not start this sign-in",
    ),
    "unissued nonce": (lambda p: _resign(p, nonce="a-nonce-we-never-issued"), "Invalid nonce"),
    "no exp": (lambda p: _resign(p, exp=None), "exp"),
}


@pytest.mark.parametrize("case", sorted(BAD_LAUNCHES))
def test_a_bad_id_token_is_refused_and_signs_nobody_in(
    case: str, launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.contrib.auth.models import User

    make_tamper, reason = BAD_LAUNCHES[case]

    flow = launch(tamper=make_tamper(platform))

    assert flow.response.status_code == 403, case
    assert b"LTI launch refused" in flow.response.content
    assert reason in flow.response.content.decode(), flow.response.content
    assert not User.objects.filter(lti_users__isnull=False).exists()
    assert "_auth_user_id" not in flow.response.client.session


def test_a_bad_signature_is_refused(launch: Callable[..., Any], platform: FakePlatform) -> None:
    impostor = new_key()

    def tamper(answer: dict[str, Any]) -> None:  # a published kid, another private key
        answer["id_token"] = platform.sign(answer["claims"], key=impostor,
                                           kid=platform.keys[0].kid)  # fmt: skip

    flow = launch(tamper=tamper)

    assert flow.response.status_code == 403
    assert b"Signature verification failed" in flow.response.content


def test_an_unknown_key_is_refused_even_after_refetching_the_key_set(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    stranger = new_key("never-published")

    def tamper(answer: dict[str, Any]) -> None:
        answer["id_token"] = platform.sign(answer["claims"], key=stranger)

    flow = launch(tamper=tamper)

    assert flow.response.status_code == 403
    assert b"Unable to find public key" in flow.response.content


def test_a_forged_state_is_refused(launch: Callable[..., Any]) -> None:
    flow = launch(tamper=lambda answer: answer.update(state="state-forged"))

    assert flow.response.status_code == 403
    assert b"This sign-in has expired or was already used" in flow.response.content


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"id_token": "not-a-jwt", "state": "s"},
        {"id_token": "a.b.c", "state": "s"},
        {"state": "only-a-state"},
    ],
)
def test_a_malformed_launch_is_a_plain_refusal_not_an_error(
    form: dict[str, str], registration: Any, client: Any
) -> None:
    response = client.post("/lti/launch/", form)

    assert response.status_code == 403
    assert b"LTI launch refused" in response.content
    assert b"Traceback" not in response.content


def test_a_get_on_the_launch_url_is_refused(registration: Any, client: Any) -> None:
    assert client.get("/lti/launch/").status_code == 405


def test_an_id_token_whose_claims_are_not_an_object_is_refused(
    launch: Callable[..., Any],
) -> None:
    import base64
    import json

    def tamper(answer: dict[str, Any]) -> None:
        header, _, signature = answer["id_token"].split(".")
        body = base64.urlsafe_b64encode(json.dumps([1, 2]).encode()).decode().rstrip("=")
        answer["id_token"] = f"{header}.{body}.{signature}"

    flow = launch(tamper=tamper)

    assert flow.response.status_code == 403
    assert b"LTI launch refused" in flow.response.content


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"error": "login_required", "error_description": "No Moodle session."},
         "Sign in to your LMS first, then open the activity again. (login_required). "
         "It said: No Moodle session."),
        ({"error": "access_denied", "state": "x"},
         "Your LMS denied access to gradlab. (access_denied)."),
        ({"error": "something_new", "error_description": "<b>Course closed</b>"},
         "Your LMS refused the launch. (something_new). It said: &lt;b&gt;Course closed&lt;/b&gt;"),
    ],
    ids=["login-required", "no-description", "unknown-code-escaped"],
)  # fmt: skip
def test_an_oidc_error_from_the_platform_is_shown_with_its_description(
    client: Any, db: None, form: dict[str, str], said: str
) -> None:
    response = client.post("/lti/launch/", form)

    assert response.status_code == 400
    page = response.content.decode()
    assert said in page
    assert "id_token" not in page
    assert "_auth_user_id" not in client.session


ADMINISTRATORS = [
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",  # Canvas, Moodle
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin",  # Canvas site admin
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",  # Moodle site admin
]


@pytest.mark.parametrize("role", ADMINISTRATORS, ids=["institution", "sysadmin", "system"])
def test_an_administrator_with_no_course_membership_teaches_the_bound_module(
    launch: Callable[..., Any], role: str
) -> None:
    from accounts.models import Enrollment

    flow = launch(sub="admin-1", roles=[role])

    assert flow.response.status_code == 302
    assert Enrollment.objects.get(user__lti_users__sub="admin-1").role == "instructor"


@pytest.mark.parametrize("role", ADMINISTRATORS[:1])
def test_an_administrator_may_deep_link(
    launch: Callable[..., Any], platform: FakePlatform, role: str
) -> None:
    flow = launch(sub="admin-1", roles=[role], **platform.deep_link_claims())

    assert flow.response.status_code == 200
    assert 'name="exercise"' in flow.response.content.decode()

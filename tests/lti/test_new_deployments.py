"""A registered platform's new deployment (a Canvas install after Dynamic Registration, a
second Moodle tool) is recorded at its first genuine launch (lti/deployments.py), opens
nothing until one of its courses is bound, and is refused when the operator says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fake_platform import COURSE_ID, FakePlatform

DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"


def _from_deployment(
    platform: FakePlatform, deployment_id: str
) -> Callable[[dict[str, Any]], None]:
    def tamper(answer: dict[str, Any]) -> None:  # the platform signs a new deployment's launch
        answer["id_token"] = platform.sign({**answer["claims"], DEPLOYMENT: deployment_id})

    return tamper


def test_a_new_deployment_is_recorded_at_its_first_launch_and_opens_nothing_unbound(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any
) -> None:
    from lti_tool.models import LtiDeployment

    flow = launch(tamper=_from_deployment(platform, "installed-later"))

    recorded = LtiDeployment.objects.get(deployment_id="installed-later")
    assert recorded.registration == registration and recorded.is_active
    assert flow.response.status_code == 404
    assert b"not linked to a gradlab module" in flow.response.content


def test_a_new_deployment_whose_course_is_bound_launches(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any, catalog: Any
) -> None:
    from lti_tool.models import LtiDeployment

    from lti.models import ContextBinding

    launch(tamper=_from_deployment(platform, "installed-later"))
    ContextBinding.objects.create(
        deployment=LtiDeployment.objects.get(deployment_id="installed-later"),
        context_id=COURSE_ID,
        module=catalog,
        origin="operator",
    )

    flow = launch(tamper=_from_deployment(platform, "installed-later"))

    assert flow.response.status_code == 302
    assert flow.response["Location"] == "/modules/autograd-backprop/first-gradient/"


def test_new_deployments_are_refused_when_the_operator_turns_them_off(
    launch: Callable[..., Any], platform: FakePlatform, settings: Any
) -> None:
    from lti_tool.models import LtiDeployment

    settings.GRADLAB_LTI_ACCEPT_NEW_DEPLOYMENTS = False

    flow = launch(tamper=_from_deployment(platform, "installed-later"))

    assert flow.response.status_code == 403
    assert b"Unable to find deployment" in flow.response.content
    assert not LtiDeployment.objects.filter(deployment_id="installed-later").exists()


def test_a_deployment_the_operator_deactivated_stays_refused(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any
) -> None:
    from lti_tool.models import LtiDeployment

    LtiDeployment.objects.create(
        registration=registration, deployment_id="switched-off", is_active=False
    )

    flow = launch(tamper=_from_deployment(platform, "switched-off"))

    assert flow.response.status_code == 403
    assert b"Unable to find deployment" in flow.response.content
    assert not LtiDeployment.objects.get(deployment_id="switched-off").is_active


def test_a_forged_launch_records_no_deployment(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from fake_platform import new_key
    from lti_tool.models import LtiDeployment

    impostor = new_key()

    def tamper(answer: dict[str, Any]) -> None:  # signed by a key the platform never published
        claims = {**answer["claims"], DEPLOYMENT: "forged"}
        answer["id_token"] = platform.sign(claims, key=impostor, kid=platform.keys[0].kid)

    flow = launch(tamper=tamper)

    assert flow.response.status_code == 403
    assert not LtiDeployment.objects.filter(deployment_id="forged").exists()


def test_the_teach_page_lists_the_lms_courses_and_deployments_linked_to_the_module(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any, catalog: Any,
    bob_instructor: Any, carol_other_course: Any,
) -> None:  # fmt: skip
    from django.test import Client
    from django.urls import reverse
    from lti_tool.models import LtiDeployment

    from lti.models import ContextBinding

    launch(tamper=_from_deployment(platform, "installed-later"))
    ContextBinding.objects.create(
        deployment=LtiDeployment.objects.get(deployment_id="installed-later"),
        context_id="course-9",
        module=catalog,
        origin="operator",
    )
    teacher, stranger = Client(), Client()
    teacher.force_login(bob_instructor)
    stranger.force_login(carol_other_course)

    page = teacher.get(reverse("web:teach_module", args=[catalog.slug])).content.decode()

    assert "LMS courses linked to this module" in page
    assert "installed-later" in page and "course-9" in page and "by the operator" in page
    assert "deployment-1" in page and COURSE_ID in page  # the registration fixture's binding
    other = stranger.get(reverse("web:teach_module", args=["other-course"]))
    assert b"installed-later" not in other.content

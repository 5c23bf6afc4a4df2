"""Enrolment links (courses.enrolment_links, web.views.enrolment): a module's instructors
make and revoke them on the Teach page; whoever opens one (after signing in) sees the
module and joins with a POST, as a learner or reviewer, never an instructor, and someone
already in the module keeps their role; closed links say why; guessing codes is
throttled; the home page takes a typed code."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG, PASSWORD, persona

pytestmark = pytest.mark.django_db

TEACH = reverse("web:teach_module", args=[MODULE_SLUG])
CREATE = reverse("web:enrolment_link_create", args=[MODULE_SLUG])
DEBUG_PAGE = ("Traceback", "technical_404", "Django tried these URL", "Using the URLconf")


@pytest.fixture
def frank_newcomer(catalog: Any) -> Any:
    """A user enrolled in no module yet."""
    return persona("frank_newcomer")


def _link(module_slug: str = MODULE_SLUG, **fields: Any) -> Any:
    from accounts.models import Enrollment
    from courses.enrolment_links import enrolment_link_create
    from courses.models import Module

    module = Module.objects.get(slug=module_slug)
    teaching = Enrollment.objects.filter(module=module, role="instructor").first()
    # An instructor already there (a persona's password is not set again: that would end
    # the session a test signed them in with), else a new one.
    creator = (
        teaching.user
        if teaching
        else persona("link_maker", module_slug=module_slug, role="instructor")
    )
    return enrolment_link_create(module=module, created_by=creator, **fields)


def _join_url(link: Any) -> str:
    return reverse("web:join", args=[link.code])


def _role(user: Any, module_slug: str = MODULE_SLUG) -> str | None:
    from accounts.models import Enrollment

    found = Enrollment.objects.filter(user=user, module__slug=module_slug).first()
    return found.role if found is not None else None


def _uses(link: Any) -> int:
    link.refresh_from_db()
    return int(link.use_count)


def _page(response: Any) -> str:
    return str(response.content.decode())


# -- the Teach page: create, list, revoke ------------------------------------------------


def test_an_instructor_creates_a_link_and_the_teach_page_lists_its_full_url_uses_and_expiry(
    web: Any, bob_instructor: Any
) -> None:
    from courses.models import EnrolmentLink

    client = web(bob_instructor)
    created = client.post(CREATE, {"role": "learner", "days": "30", "max_uses": "40"}, follow=True)

    link = EnrolmentLink.objects.get(module__slug=MODULE_SLUG)
    url = f"http://testserver/join/{link.code}/"
    page = _page(created)
    assert created.redirect_chain[-1][0] == f"{TEACH}#enrolment-links"
    assert f"Enrolment link created: {url}" in page  # the message
    assert f'value="{url}" readonly' in page  # the list, copyable
    assert f'data-copy="enrolment-link-{link.pk}"' in page and "web/js/copy.js" in page
    assert "0 of 40" in page
    expires = timezone.localtime(link.expires_at)
    assert timedelta(days=29, hours=23) < link.expires_at - timezone.now() <= timedelta(days=30)
    assert f"{expires:%b} {expires.day}, {expires.year}" in page
    assert (link.role, link.max_uses, link.created_by) == ("learner", 40, bob_instructor)


def test_a_link_expires_after_14_days_by_default_and_never_after_more_than_180(
    web: Any, bob_instructor: Any
) -> None:
    from courses.models import EnrolmentLink

    client = web(bob_instructor)
    client.post(CREATE, {"role": "learner"})
    refused = client.post(CREATE, {"role": "learner", "days": "181"}, follow=True)

    link = EnrolmentLink.objects.get(module__slug=MODULE_SLUG)
    assert timedelta(days=13, hours=23) < link.expires_at - timezone.now() <= timedelta(days=14)
    assert "A link expires after 1 to 180 days." in _page(refused)


def test_a_link_never_grants_the_instructor_role(web: Any, bob_instructor: Any) -> None:
    from django.db import IntegrityError, transaction

    from common.errors import InvalidInput
    from courses.models import EnrolmentLink

    refused = web(bob_instructor).post(CREATE, {"role": "instructor"}, follow=True)

    assert "never instructors" in _page(refused)
    assert not EnrolmentLink.objects.exists()
    with pytest.raises(InvalidInput):
        _link(role="instructor")
    link = _link()
    with pytest.raises(IntegrityError), transaction.atomic():  # nor does the table take one
        EnrolmentLink.objects.filter(pk=link.pk).update(role="instructor")


def test_an_instructor_revokes_a_link_and_it_leaves_the_list(web: Any, bob_instructor: Any) -> None:
    link = _link()
    revoke = reverse("web:enrolment_link_revoke", args=[MODULE_SLUG, link.pk])

    response = web(bob_instructor).post(revoke, follow=True)

    link.refresh_from_db()
    assert link.revoked_at is not None
    page = _page(response)
    assert "revoked: it lets no one join any more" in page
    assert link.code not in page.replace(f"{link.code[:4]}-", "")  # neither URL nor code
    assert "No open enrolment link." in page


def test_a_learner_may_neither_create_nor_revoke_a_link(web: Any, alice_learner: Any) -> None:
    from courses.models import EnrolmentLink

    link = _link()
    client = web(alice_learner)
    revoke = reverse("web:enrolment_link_revoke", args=[MODULE_SLUG, link.pk])

    assert client.post(CREATE, {"role": "learner"}).status_code == 403
    assert client.post(revoke).status_code == 403
    assert client.get(TEACH).status_code == 403  # nor see the links
    link.refresh_from_db()
    assert link.revoked_at is None and EnrolmentLink.objects.count() == 1


def test_an_instructor_of_another_module_may_neither_create_nor_revoke_its_links(
    web: Any, carol_other_course: Any
) -> None:
    link = _link()
    client = web(carol_other_course)
    through_this = reverse("web:enrolment_link_revoke", args=[MODULE_SLUG, link.pk])
    through_theirs = reverse("web:enrolment_link_revoke", args=[OTHER_MODULE_SLUG, link.pk])

    assert client.post(CREATE, {"role": "learner"}).status_code == 403
    assert client.post(through_this).status_code == 403
    assert client.post(through_theirs).status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None


def test_the_teach_page_forms_are_refused_without_a_csrf_token(bob_instructor: Any) -> None:
    from courses.models import EnrolmentLink

    client = Client(enforce_csrf_checks=True)
    client.force_login(bob_instructor)

    assert client.post(CREATE, {"role": "learner"}).status_code == 403
    assert not EnrolmentLink.objects.exists()


# -- joining -----------------------------------------------------------------------------


def test_a_signed_out_learner_signs_in_comes_back_to_the_link_and_joins(
    frank_newcomer: Any,
) -> None:
    link = _link()
    client = Client()

    opened = client.get(_join_url(link))
    login = reverse("web:login")
    assert opened.status_code == 302
    assert opened["Location"] == f"{login}?next={_join_url(link)}"
    signed_in = client.post(
        login, {"username": "frank_newcomer", "password": PASSWORD, "next": _join_url(link)}
    )
    assert signed_in["Location"] == _join_url(link)
    page = client.get(_join_url(link))
    assert page.status_code == 200
    assert f"Join {link.module.title}" in _page(page)
    assert 'method="post"' in _page(page) and _role(frank_newcomer) is None

    joined = client.post(_join_url(link), follow=True)

    assert joined.redirect_chain[-1][0] == reverse("web:module", args=[MODULE_SLUG])
    assert f"You joined {link.module.title} as a learner." in _page(joined)
    assert _role(frank_newcomer) == "learner" and _uses(link) == 1


def test_opening_a_link_enrols_no_one_until_join_is_posted(web: Any, frank_newcomer: Any) -> None:
    link = _link()
    client = web(frank_newcomer)

    for _ in range(3):
        page = client.get(_join_url(link))
        assert page.status_code == 200 and link.module.title in _page(page)

    assert _role(frank_newcomer) is None and _uses(link) == 0


def test_a_reviewer_link_makes_a_reviewer(web: Any, frank_newcomer: Any) -> None:
    link = _link(role="reviewer")

    page = web(frank_newcomer).get(_join_url(link))
    web(frank_newcomer).post(_join_url(link))

    assert "as a reviewer" in _page(page)
    assert _role(frank_newcomer) == "reviewer"


def test_a_member_opening_a_link_goes_to_the_module_page_and_uses_nothing(
    web: Any, alice_learner: Any
) -> None:
    link = _link(role="reviewer")
    client = web(alice_learner)

    opened = client.get(_join_url(link), follow=True)
    posted = client.post(_join_url(link), follow=True)

    for response in (opened, posted):
        assert response.redirect_chain[-1][0] == reverse("web:module", args=[MODULE_SLUG])
        assert "You are already in" in _page(response) and "as a learner" in _page(response)
    assert _role(alice_learner) == "learner" and _uses(link) == 0


def test_an_instructor_joining_by_a_link_stays_an_instructor(
    web: Any, bob_instructor: Any, erin_co_instructor: Any
) -> None:
    link = _link()

    web(erin_co_instructor).post(_join_url(link))
    opened = web(erin_co_instructor).get(_join_url(link), follow=True)

    assert _role(erin_co_instructor) == "instructor" and _uses(link) == 0
    assert "as an instructor" in _page(opened)


def _assert_closed(response: Any, status: int, says: str) -> None:
    page = _page(response)
    assert response.status_code == status
    assert says in page and 'class="skip-link"' in page  # our layout
    assert not [leak for leak in DEBUG_PAGE if leak in page]


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
def test_an_expired_link_answers_410_saying_it_expired_and_enrols_no_one(
    web: Any, frank_newcomer: Any, settings: Any, debug: bool
) -> None:
    from courses.models import EnrolmentLink

    settings.DEBUG = debug
    link = _link()
    EnrolmentLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(1))
    client = web(frank_newcomer)

    for response in (client.get(_join_url(link)), client.post(_join_url(link))):
        _assert_closed(response, 410, "This enrolment link expired on")
    assert _role(frank_newcomer) is None


def test_a_revoked_link_answers_410_saying_it_was_revoked(web: Any, frank_newcomer: Any) -> None:
    from courses.enrolment_links import enrolment_link_revoke

    link = _link()
    enrolment_link_revoke(module=link.module, link_id=link.pk)
    client = web(frank_newcomer)

    for response in (client.get(_join_url(link)), client.post(_join_url(link))):
        _assert_closed(response, 410, "This enrolment link was revoked")
    assert _role(frank_newcomer) is None


def test_a_link_used_as_often_as_it_allows_lets_no_one_else_join(
    web: Any, frank_newcomer: Any, catalog: Any
) -> None:
    link = _link(max_uses=1)
    grace = persona("grace_newcomer")

    web(frank_newcomer).post(_join_url(link))
    refused = web(grace).post(_join_url(link))

    _assert_closed(refused, 410, "has been used the once it allowed")
    assert _role(frank_newcomer) == "learner" and _role(grace) is None and _uses(link) == 1
    revisit = web(frank_newcomer).get(_join_url(link), follow=True)  # a member still gets in
    assert revisit.redirect_chain[-1][0] == reverse("web:module", args=[MODULE_SLUG])


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
def test_an_unknown_code_answers_a_styled_404_saying_no_module_has_it(
    web: Any, frank_newcomer: Any, settings: Any, debug: bool
) -> None:
    settings.DEBUG = debug
    _link()

    response = web(frank_newcomer).post(reverse("web:join", args=["ABCDEFGHJKLM"]))

    _assert_closed(response, 404, "No module has this enrolment code.")
    assert _role(frank_newcomer) is None


def test_guessing_codes_is_throttled_even_for_a_right_code_and_only_for_the_guesser(
    web: Any, frank_newcomer: Any, alice_learner: Any, catalog: Any
) -> None:
    from courses.enrolment_links import MISS_LIMIT

    link = _link(module_slug=OTHER_MODULE_SLUG)
    client = web(frank_newcomer)
    for number in range(MISS_LIMIT):
        guess = reverse("web:join", args=[f"ABCDEFGH{number:04d}"])
        assert client.get(guess).status_code == 404

    throttled = client.post(_join_url(link))
    other = web(alice_learner).get(_join_url(link))

    _assert_closed(throttled, 429, "Too many enrolment codes that match no module")
    assert int(throttled["Retry-After"]) > 0
    assert _role(frank_newcomer, OTHER_MODULE_SLUG) is None
    assert other.status_code == 200  # another user is not throttled


# -- the home page's code ----------------------------------------------------------------


def test_the_home_page_takes_a_typed_code_on_to_its_join_page(
    web: Any, frank_newcomer: Any
) -> None:
    link = _link()
    client = web(frank_newcomer)
    typed = f" {link.code[:4].lower()}-{link.code[4:8]} {link.code[8:]}"

    home = client.get(reverse("web:home"))
    sent = client.get(reverse("web:join_code"), {"code": typed}, follow=True)

    assert 'action="/join/"' in _page(home) and 'for="join-code"' in _page(home)
    assert sent.redirect_chain[0][0] == _join_url(link)
    assert f"Join {link.module.title}" in _page(sent) and _role(frank_newcomer) is None


def test_a_code_that_cannot_be_one_is_refused_on_the_form_without_counting_a_miss(
    web: Any, frank_newcomer: Any
) -> None:
    from courses.models import EnrolmentCodeMiss

    response = web(frank_newcomer).get(reverse("web:join_code"), {"code": "hello/../x"})

    assert response.status_code == 200
    assert "An enrolment code has 12 letters and digits" in _page(response)
    assert not EnrolmentCodeMiss.objects.exists()


def test_a_learner_of_one_module_reaches_the_code_form_from_the_module_page(
    web: Any, alice_learner: Any
) -> None:
    client = web(alice_learner)

    module_page = client.get(reverse("web:home"), follow=True)  # one module: its page
    form = client.get(reverse("web:join_code"))

    assert 'href="/join/">Join another module</a>' in _page(module_page)
    assert form.status_code == 200 and 'for="join-code"' in _page(form)
    assert 'role="alert"' not in _page(form)  # nothing typed, nothing wrong yet

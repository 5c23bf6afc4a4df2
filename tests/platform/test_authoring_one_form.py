"""The exercise editor is one form: Validate saves the page's unsaved changes first,
Publish refuses with them (saving them, nothing lost), Save dates keeps them too, and an
import that replaces an unpublished draft names the drafts it replaced."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG, persona
from platform_helpers import E2E_SLUG

from grader.authoring import archive
from web.manifest_form import form_rows

pytestmark = pytest.mark.django_db

NEW = "cube-gradient"
EDITED = "\nEdited on the page, not saved yet.\n"


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-authoring-one-form-test"


@pytest.fixture
def bob(web: Any, bob_instructor: Any) -> Any:
    return web(bob_instructor)


def _action(name: str, slug: str) -> str:
    return reverse(f"web:{name}", args=[MODULE_SLUG, slug])


def _editor(slug: str) -> str:
    return reverse("web:author_exercise", args=[MODULE_SLUG, slug])


def _exercise(slug: str) -> Any:
    from courses.models import Exercise

    return Exercise.objects.get(slug=slug)


def _draft_files(slug: str) -> dict[str, str]:
    from authoring.services import draft_get

    return dict(draft_get(exercise=_exercise(slug)).version.files)


def _page_post(slug: str, **changes: str) -> dict[str, str]:
    """What the editor's one form posts for the saved draft of `slug`: the manifest's form
    values, the TOML view and every file's text, then `changes`."""
    files = _draft_files(slug)
    rows = form_rows(files["exercise.toml"])
    assert rows is not None
    data = {**rows.fields, "names": rows.names, "toml": files["exercise.toml"]}
    for key, prefix in (("checks", "check"), ("wrong", "wrong"), ("alternative", "alternative")):
        items = getattr(rows, key)
        data[f"{prefix}-count"] = str(len(items))
        for index, item in enumerate(items):
            data.update({f"{prefix}-{index}-{f}": v for f, v in item.items()})
    data.update({f"file:{path}": text for path, text in files.items() if path != "exercise.toml"})
    data.update(changes)
    return data


def _edited_statement(slug: str) -> dict[str, str]:
    return _page_post(slug, **{"file:statement.md": _draft_files(slug)["statement.md"] + EDITED})


def _messages(response: Any) -> str:
    return " ".join(re.findall(r'<ul class="messages">(.*?)</ul>', response.content.decode(), re.S))


def test_the_editor_page_has_one_form_for_validate_publish_and_dates(bob: Any) -> None:
    html = bob.get(_editor(E2E_SLUG)).content.decode()

    for name in ("author_validate", "author_publish", "author_schedule"):
        url = _action(name, E2E_SLUG)
        assert f'<form method="post" action="{url}"' not in html, name
        assert re.search(rf'<button type="submit" form="author-form" formaction="{url}"', html)
    for field in ("release-at", "due-at", "late-counts"):
        assert re.search(rf'id="{field}"[^>]*form="author-form"', html), field


def test_validate_saves_the_pages_unsaved_changes_and_validates_them(bob: Any) -> None:
    from courses.models import ExerciseJob

    bob.post(reverse("web:author_create_exercise", args=[MODULE_SLUG]),
             {"slug": NEW, "title": "Cube"})  # fmt: skip

    response = bob.post(_action("author_validate", NEW), _edited_statement(NEW), follow=True)

    draft = _exercise(NEW).draft_version
    assert draft is not None and dict(draft.files)["statement.md"].endswith(EDITED)
    job = ExerciseJob.objects.get(exercise__slug=NEW, kind=ExerciseJob.Kind.VALIDATE)
    assert job.version_id == draft.pk  # what the page showed is what is validated
    assert "Saved your changes; validating them." in _messages(response)


def test_publish_with_unsaved_changes_publishes_nothing_and_keeps_them_as_the_draft(
    bob: Any,
) -> None:
    published = _exercise(E2E_SLUG).current_version_id

    response = bob.post(_action("author_publish", E2E_SLUG), _edited_statement(E2E_SLUG),
                        follow=True)  # fmt: skip

    exercise = _exercise(E2E_SLUG)
    assert exercise.current_version_id == published
    assert exercise.draft_version is not None
    assert dict(exercise.draft_version.files)["statement.md"].endswith(EDITED)
    assert "Not published: the page had unsaved changes" in _messages(response)


def test_publish_of_the_unchanged_page_is_not_taken_for_unsaved_changes(bob: Any) -> None:
    bob.post(reverse("web:author_create_exercise", args=[MODULE_SLUG]),
             {"slug": NEW, "title": "Cube"})  # fmt: skip
    draft = _exercise(NEW).draft_version_id

    response = bob.post(_action("author_publish", NEW), _page_post(NEW), follow=True)

    assert _exercise(NEW).draft_version_id == draft  # no new version: nothing changed
    assert "unsaved changes" not in _messages(response)
    assert "Validate this content before publishing it." in _messages(response)


def test_save_dates_saves_the_pages_unsaved_changes_too(bob: Any) -> None:
    posted = {**_edited_statement(E2E_SLUG), "release_at": "", "due_at": "2026-12-24T18:00"}

    bob.post(_action("author_schedule", E2E_SLUG), posted)

    exercise = _exercise(E2E_SLUG)
    assert exercise.due_at is not None and exercise.due_at.isoformat().startswith("2026-12-24T18")
    assert exercise.draft_version is not None
    assert dict(exercise.draft_version.files)["statement.md"].endswith(EDITED)


def test_a_reviewer_validating_a_changed_page_is_told_the_changes_are_not_saved(
    web: Any, catalog: Any
) -> None:
    from courses.models import ExerciseJob

    rita = web(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))

    response = rita.post(_action("author_validate", E2E_SLUG), _edited_statement(E2E_SLUG),
                         follow=True)  # fmt: skip

    assert "a reviewer cannot save them" in _messages(response)
    assert not ExerciseJob.objects.filter(exercise__slug=E2E_SLUG).exists()
    assert _exercise(E2E_SLUG).draft_version is None


def _upload(bob: Any, files: dict[str, str]) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("m.zip", archive.write_archive(files, "zip"))
    url = reverse("web:author_upload_archive", args=[MODULE_SLUG])
    return bob.post(url, {"archive": upload}, follow=True)


def test_an_import_over_an_unpublished_draft_names_the_draft_it_replaced(bob: Any) -> None:
    download = bob.get(reverse("web:author_module_archive", args=[MODULE_SLUG]) + "?type=zip")
    files = archive.read_archive(download.content)
    bob.post(_action("author_save", E2E_SLUG), _edited_statement(E2E_SLUG))
    assert _exercise(E2E_SLUG).draft_version is not None  # an unpublished draft

    response = _upload(bob, files)

    said = _messages(response)
    assert "replaced the unpublished draft of 1 exercise(s)" in said and E2E_SLUG in said
    assert not _draft_files(E2E_SLUG)["statement.md"].endswith(EDITED)


def test_an_import_that_replaces_no_draft_says_nothing_of_drafts(bob: Any) -> None:
    download = bob.get(reverse("web:author_module_archive", args=[MODULE_SLUG]) + "?type=zip")

    response = _upload(bob, archive.read_archive(download.content))

    assert "Imported" in _messages(response) and "replaced" not in _messages(response)

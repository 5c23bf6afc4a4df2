"""The author page's History (authoring.history, web.views.authoring.history): earlier
saved drafts and published versions, newest first, each with a diff against the current
draft and a Restore (confirmed first) that makes its files the current draft, undone by
restoring the draft it replaced; reviewers read it, other modules' instructors are refused; a
draft an import replaced is listed there and restorable."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG, persona
from platform_helpers import E2E_SLUG

from grader.authoring import archive

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-author-history-test"


@pytest.fixture
def bob(web: Any, bob_instructor: Any) -> Any:
    return web(bob_instructor)


@pytest.fixture
def rita(web: Any, catalog: Any) -> Any:
    return web(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))


def _url(name: str) -> str:
    return reverse(f"web:{name}", args=[MODULE_SLUG, E2E_SLUG])


def _exercise() -> Any:
    from courses.models import Exercise

    return Exercise.objects.get(slug=E2E_SLUG)


def _save(user: Any, mark: str) -> Any:
    """A draft of the exercise: its published statement with `mark` added, saved by `user`."""
    from authoring.services import draft_save

    exercise = _exercise()
    files = dict(exercise.current_version.files)
    files["statement.md"] += f"\n{mark}\n"
    return draft_save(exercise=exercise, files=files, user=user).version


def _rows(html: str) -> list[str]:
    """The History table's rows (their data-ref and whether current), top to bottom."""
    body = html.split('id="history-table"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr data-ref="([^"]+)"', body)


def _current_ref(html: str) -> str:
    body = html.split('id="history-table"', 1)[1]
    found = re.search(r'<tr data-ref="([^"]+)" data-current="1"', body)
    assert found is not None
    return found.group(1)


def _messages(response: Any) -> str:
    return " ".join(re.findall(r'<ul class="messages">(.*?)</ul>', response.content.decode(), re.S))


def _restore(client: Any, ref: str, *, confirmed: bool = True) -> Any:
    data = {"version": ref, **({"confirmed": "yes"} if confirmed else {})}
    return client.post(_url("author_restore"), data, follow=confirmed)


def _statement() -> str:
    from authoring.services import draft_get

    return str(draft_get(exercise=_exercise()).version.files["statement.md"])


def test_the_history_lists_drafts_and_published_versions_newest_first_with_who_saved(
    bob: Any, bob_instructor: Any
) -> None:
    first, second = _save(bob_instructor, "first edit"), _save(bob_instructor, "second edit")

    html = bob.get(_url("author_exercise")).content.decode()

    rows = _rows(html)
    assert rows[:2] == [second.content_hash, first.content_hash]
    assert "1" in rows  # the published v1 too
    assert _current_ref(html) == second.content_hash
    table = html.split('id="history-table"', 1)[1].split("</table>", 1)[0]
    assert table.count("bob_instructor") == 2 and "earlier draft" in table
    assert table.count('class="history-diff"') == len(rows) - 1  # all but the current


def test_the_history_is_bounded_and_says_how_long_drafts_are_kept(
    bob: Any, bob_instructor: Any, settings: Any
) -> None:
    from authoring.history import HISTORY_LIMIT
    from courses.models import ExerciseVersion

    settings.GRADLAB_DRAFTS_KEPT = 7
    base = _save(bob_instructor, "edit")
    fields = {"manifest": {}, "statement": "", "statement_html": "", "starter_code": ""}
    ExerciseVersion.objects.bulk_create(  # drafts as many saves leave them, written at once
        ExerciseVersion(exercise_id=base.exercise_id, content_hash=f"{n:064x}", files={},
                        hidden_seed=n, saved_by=bob_instructor, **fields)
        for n in range(HISTORY_LIMIT)
    )  # fmt: skip

    html = bob.get(_url("author_exercise")).content.decode()

    assert len(_rows(html)) == HISTORY_LIMIT
    assert "keeps the 7 most recently saved" in html


def test_a_restore_first_shows_the_diff_and_asks_and_changes_nothing(
    bob: Any, bob_instructor: Any
) -> None:
    old = _save(bob_instructor, "old wording")
    newer = _save(bob_instructor, "new wording")

    response = _restore(bob, old.content_hash, confirmed=False)

    html = response.content.decode()
    assert response.status_code == 200 and 'data-testid="restore-confirm"' in html
    assert 'name="confirmed" value="yes"' in html
    assert "-new wording" in html and "+old wording" in html  # current draft -> restored
    assert _exercise().draft_version_id == newer.pk


def test_restoring_an_earlier_draft_makes_it_current_and_says_from_when_and_what(
    bob: Any, bob_instructor: Any
) -> None:
    from courses.models import ExerciseVersion

    published = _exercise().current_version_id
    old = _save(bob_instructor, "old wording")
    _save(bob_instructor, "new wording")
    versions = ExerciseVersion.objects.filter(exercise__slug=E2E_SLUG).count()

    response = _restore(bob, old.content_hash)

    exercise = _exercise()
    assert exercise.draft_version_id == old.pk and _statement().endswith("\nold wording\n")
    assert exercise.current_version_id == published  # learners' version untouched
    assert ExerciseVersion.objects.filter(exercise__slug=E2E_SLUG).count() == versions
    said = _messages(response)
    assert re.search(
        rf"Restored draft from \d{{4}}-\d\d-\d\d \d\d:\d\d UTC \(was {old.label}\)", said
    )
    assert _current_ref(response.content.decode()) == old.content_hash


def test_a_restore_is_undone_by_restoring_the_draft_it_replaced(
    bob: Any, bob_instructor: Any
) -> None:
    old = _save(bob_instructor, "old wording")
    newer = _save(bob_instructor, "new wording")
    said = _messages(_restore(bob, old.content_hash))
    assert f"To undo, restore {newer.label}" in said

    _restore(bob, newer.content_hash)

    assert _exercise().draft_version_id == newer.pk and _statement().endswith("\nnew wording\n")


def test_restoring_the_published_version_drops_the_draft_and_changes_no_published_version(
    bob: Any, bob_instructor: Any
) -> None:
    from courses.models import ExerciseVersion

    published = list(
        ExerciseVersion.objects.filter(exercise__slug=E2E_SLUG, number__isnull=False)
        .values_list("pk", "number", "content_hash")
        .order_by("pk")
    )
    draft = _save(bob_instructor, "unpublished")

    _restore(bob, "1")

    exercise = _exercise()
    assert exercise.draft_version_id is None and exercise.current_version_id == published[0][0]
    after = ExerciseVersion.objects.filter(exercise__slug=E2E_SLUG, number__isnull=False)
    assert list(after.values_list("pk", "number", "content_hash").order_by("pk")) == published
    assert ExerciseVersion.objects.filter(pk=draft.pk).exists()  # undo stays possible


def test_restoring_the_current_draft_or_an_unknown_version_restores_nothing(
    bob: Any, bob_instructor: Any
) -> None:
    draft = _save(bob_instructor, "current")

    same = _messages(_restore(bob, draft.content_hash))
    unknown = _messages(_restore(bob, "f" * 64))

    assert f"Not restored: {draft.label} is the current draft already." in same
    assert "Not restored: That version is no longer kept" in unknown
    assert _exercise().draft_version_id == draft.pk


def test_the_diff_link_compares_an_earlier_draft_with_the_current_draft(
    bob: Any, bob_instructor: Any
) -> None:
    old = _save(bob_instructor, "old wording")
    _save(bob_instructor, "new wording")
    html = bob.get(_url("author_exercise")).content.decode()
    link = re.search(rf'href="([^"]*\?from={old.content_hash}&amp;to=draft)"', html)
    assert link is not None

    diff = bob.get(link.group(1).replace("&amp;", "&")).content.decode()

    assert f"{old.label} → draft" in diff and "-old wording" in diff and "+new wording" in diff


def test_a_reviewer_sees_the_history_and_its_diffs_but_may_not_restore(
    rita: Any, bob_instructor: Any
) -> None:
    old = _save(bob_instructor, "old wording")
    newer = _save(bob_instructor, "new wording")

    html = rita.get(_url("author_exercise")).content.decode()
    diff = rita.get(_url("author_diff"), {"from": old.content_hash, "to": "draft"})
    refused = [_restore(rita, old.content_hash, confirmed=c).status_code for c in (False, True)]

    assert _rows(html)[:2] == [newer.content_hash, old.content_hash]
    assert "history-restore" not in html and _url("author_restore") not in html
    assert diff.status_code == 200
    assert refused == [403, 403] and _exercise().draft_version_id == newer.pk


def test_an_instructor_of_another_module_is_refused_the_history_diff_and_restore(
    web: Any, carol_other_course: Any, bob_instructor: Any
) -> None:
    old = _save(bob_instructor, "old wording")
    newer = _save(bob_instructor, "new wording")
    carol = web(carol_other_course)

    page = carol.get(_url("author_exercise"))
    diff = carol.get(_url("author_diff"), {"from": old.content_hash, "to": "draft"})
    restore = carol.post(_url("author_restore"), {"version": old.content_hash, "confirmed": "yes"})

    # 403, as on every authoring page and endpoint (test_api_authoring: 403 everywhere)
    assert (page.status_code, diff.status_code, restore.status_code) == (403, 403, 403)
    assert "history-table" not in page.content.decode()
    assert _exercise().draft_version_id == newer.pk


def test_a_pruned_draft_leaves_the_history_and_cannot_be_restored(
    bob: Any, bob_instructor: Any
) -> None:
    from courses.pruning import drafts_prune

    old = _save(bob_instructor, "old wording")
    newer = _save(bob_instructor, "new wording")
    drafts_prune(keep=1)

    html = bob.get(_url("author_exercise")).content.decode()
    said = _messages(_restore(bob, old.content_hash))

    assert old.content_hash not in _rows(html) and newer.content_hash in _rows(html)
    assert "no longer kept" in said and _exercise().draft_version_id == newer.pk


def test_a_restored_draft_heads_the_history_and_pruning_keeps_it_and_the_draft_it_replaced(
    bob: Any, bob_instructor: Any
) -> None:
    from courses.pruning import drafts_prune

    old = _save(bob_instructor, "old wording")
    for n in range(3):
        _save(bob_instructor, f"later {n}")
    replaced = _save(bob_instructor, "latest")
    _restore(bob, old.content_hash)

    drafts_prune(keep=2)  # the two most recently saved drafts: the restored, the replaced

    rows = _rows(bob.get(_url("author_exercise")).content.decode())
    assert rows[:2] == [old.content_hash, replaced.content_hash]
    _restore(bob, replaced.content_hash)  # the undo the message offered still works
    assert _exercise().draft_version_id == replaced.pk


def _upload(bob: Any, files: dict[str, str]) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("m.zip", archive.write_archive(files, "zip"))
    return bob.post(reverse("web:author_upload_archive", args=[MODULE_SLUG]), {"archive": upload},
                    follow=True)  # fmt: skip


def test_a_draft_an_import_replaced_is_named_listed_in_the_history_and_restorable(
    bob: Any, bob_instructor: Any
) -> None:
    download = bob.get(reverse("web:author_module_archive", args=[MODULE_SLUG]) + "?type=zip")
    mine = _save(bob_instructor, "my unpublished work")

    said = _messages(_upload(bob, archive.read_archive(download.content)))

    assert "replaced the unpublished draft of 1 exercise(s)" in said and E2E_SLUG in said
    assert "History, to restore" in said
    assert not _statement().endswith("my unpublished work\n")
    assert mine.content_hash in _rows(bob.get(_url("author_exercise")).content.decode())
    _restore(bob, mine.content_hash)
    assert _exercise().draft_version_id == mine.pk
    assert _statement().endswith("\nmy unpublished work\n")

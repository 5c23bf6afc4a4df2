"""The authoring pages (web.views.authoring) through Django's test client: the module's
list, creating an exercise, the manifest form and the TOML view, files, statement preview,
validation, publishing, try-as-learner, diffs, import and export, dates; who may do what."""

from __future__ import annotations

import gzip
import re
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import EXERCISES, MODULE_SLUG, persona
from platform_helpers import E2E_SLUG

from grader.authoring import archive
from web.manifest_form import apply_form, dumps, form_rows

pytestmark = pytest.mark.django_db

AUTHOR = reverse("web:author_module", args=[MODULE_SLUG])


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-authoring-pages-test"


@pytest.fixture
def bob(web: Any, bob_instructor: Any) -> Any:
    return web(bob_instructor)


def _editor(slug: str) -> str:
    return reverse("web:author_exercise", args=[MODULE_SLUG, slug])


def _action(name: str, slug: str | None = None) -> str:
    """The URL of one form action: the module's (`slug` None) or one exercise's."""
    return reverse(f"web:{name}", args=[MODULE_SLUG] if slug is None else [MODULE_SLUG, slug])


def _create(bob: Any, slug: str = "cube-gradient") -> Any:
    return bob.post(_action("author_create_exercise"), {"slug": slug, "title": "Cube"})


def _form_post(page_html: str, files: dict[str, str], **changes: str) -> dict[str, str]:
    """What the page's form posts: the manifest's form values and every file's text."""
    rows = form_rows(files["exercise.toml"])
    assert rows is not None
    data = {**rows.fields, "names": rows.names}
    for key, prefix in (("checks", "check"), ("wrong", "wrong"), ("alternative", "alternative")):
        items = getattr(rows, key)
        data[f"{prefix}-count"] = str(len(items))
        for index, item in enumerate(items):
            data.update({f"{prefix}-{index}-{f}": v for f, v in item.items()})
    data.update({f"file:{path}": text for path, text in files.items()})
    data.update(changes)
    return data


def _draft_files(slug: str) -> dict[str, str]:
    from authoring.services import draft_get
    from courses.models import Exercise

    return dict(draft_get(exercise=Exercise.objects.get(slug=slug)).version.files)


# -- the manifest form, without a page ------------------------------------------------------


@pytest.mark.parametrize(
    "path", sorted(EXERCISES.glob("*/exercise.toml")), ids=lambda p: p.parent.name
)
def test_every_course_manifest_survives_the_toml_writer_and_an_unchanged_form(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    form = _form_post("", {"exercise.toml": text})

    assert tomllib.loads(dumps(raw)) == raw
    assert tomllib.loads(apply_form(text, form)) == raw


def test_the_form_edits_checks_and_keeps_the_options_it_does_not_show() -> None:
    text = (EXERCISES / "first-gradient" / "exercise.toml").read_text(encoding="utf-8")
    form = _form_post("", {"exercise.toml": text}, **{
        "check-0-points": "4", "check-1-delete": "on", "check-new-name": "x is a leaf",
        "check-new-type": "graph", "check-new-target": "x", "check-new-points": "3",
    })  # fmt: skip

    raw = tomllib.loads(apply_form(text, form))

    names = [c["name"] for c in raw["checks"]]
    assert names[-1] == "x is a leaf" and "y is x squared" not in names
    graph = next(c for c in raw["checks"] if c["type"] == "graph" and c["target"] == "y")
    assert graph["facts"] == ["requires_grad", "is_leaf", "grad_fn"]
    assert raw["points"] == sum(c["points"] for c in raw["checks"]) == 4 + 2 + 1 + 1 + 3
    assert raw["tolerance_note"].startswith("Every value is a float32 scalar")


# -- pages -------------------------------------------------------------------------------------


def test_the_teach_page_links_the_authoring_page_which_lists_the_exercises(bob: Any) -> None:
    teach = bob.get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()
    page = bob.get(AUTHOR)

    assert AUTHOR in teach
    assert page.status_code == 200
    assert f'data-slug="{E2E_SLUG}"' in page.content.decode()
    assert 'id="create-exercise"' in page.content.decode()


def test_a_learner_gets_403_and_a_reviewer_reads_without_the_forms(
    web: Any, alice_learner: Any, catalog: Any
) -> None:
    rita = web(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))

    assert web(alice_learner).get(AUTHOR).status_code == 403
    assert web(alice_learner).get(_editor(E2E_SLUG)).status_code == 403
    page = rita.get(AUTHOR).content.decode()
    editor = rita.get(_editor(E2E_SLUG)).content.decode()
    assert 'id="create-exercise"' not in page
    assert 'id="validate-button"' in editor and 'id="publish-button"' not in editor
    assert rita.post(_action("author_publish", E2E_SLUG)).status_code == 403


MODULE_ACTIONS = (
    "author_create_exercise", "author_create_module", "author_upload_archive",
    "author_objectives", "author_add_member", "author_roster",
)  # fmt: skip
EXERCISE_WRITES = (
    "author_save", "author_save_toml", "author_save_validate", "author_schedule",
    "author_publish", "author_unpublish",
)  # fmt: skip


def _posts_to(html: str) -> set[str]:
    """Where the page's forms and submit buttons post."""
    return set(re.findall(r'<form method="post" action="([^"]+)"', html)) | set(
        re.findall(r'formaction="([^"]+)"', html)
    )


def test_each_form_of_the_pages_posts_to_its_own_action(bob: Any) -> None:
    page = bob.get(AUTHOR).content.decode()
    editor = bob.get(_editor(E2E_SLUG)).content.decode()

    assert {_action(name) for name in MODULE_ACTIONS} <= _posts_to(page)
    writes = {_action(name, E2E_SLUG) for name in (*EXERCISE_WRITES, "author_validate")}
    assert writes <= _posts_to(editor)
    for value, name in (("save-form", "author_save"), ("save-toml", "author_save_toml"),
                        ("save-validate", "author_save_validate")):  # fmt: skip
        assert f'formaction="{_action(name, E2E_SLUG)}" name="action" value="{value}"' in editor


def test_the_pages_take_no_post_and_the_actions_no_get(bob: Any) -> None:
    assert bob.post(AUTHOR).status_code == 405
    assert bob.post(_editor(E2E_SLUG)).status_code == 405
    assert bob.get(_action("author_create_exercise")).status_code == 405
    assert bob.get(_action("author_publish", E2E_SLUG)).status_code == 405


def test_a_reviewer_may_validate_but_no_action_that_writes(web: Any, catalog: Any) -> None:
    from courses.models import ExerciseJob

    rita = web(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))

    refused = [rita.post(_action(name)).status_code for name in MODULE_ACTIONS]
    refused += [rita.post(_action(name, E2E_SLUG)).status_code for name in EXERCISE_WRITES]
    validated = rita.post(_action("author_validate", E2E_SLUG))

    assert set(refused) == {403}
    assert validated.status_code == 302
    assert validated["Location"] == _editor(E2E_SLUG) + "#validation"
    assert ExerciseJob.objects.filter(exercise__slug=E2E_SLUG).count() == 1


def test_an_action_on_a_missing_exercise_or_module_is_a_404(bob: Any) -> None:
    assert bob.post(_action("author_publish", "no-such-exercise")).status_code == 404
    assert bob.post(_action("author_validate", "no-such-exercise")).status_code == 404
    missing = reverse("web:author_create_exercise", args=["no-such-module"])
    assert bob.post(missing, {"slug": "x"}).status_code == 404


def test_creating_an_exercise_opens_its_editor_with_form_files_and_preview(bob: Any) -> None:
    response = _create(bob)

    assert response.status_code == 302 and response["Location"] == _editor("cube-gradient")
    page = bob.get(_editor("cube-gradient")).content.decode()
    assert 'name="check-0-name" value="x.grad is dy/dx = 3x^2"' in page
    assert 'name="file:solution.py"' in page and 'name="file:wrong/forgot-requires-grad.py"' in page
    assert 'id="statement-preview"' in page and "What is checked (10 points)" in page
    assert "never published" in page


def test_saving_the_form_writes_the_manifest_and_every_file(bob: Any) -> None:
    _create(bob)
    files = _draft_files("cube-gradient")
    data = _form_post("", files, title="Cubes", **{
        "file:solution.py": files["solution.py"] + "# checked\n",
        "new_file_kind": "wrong", "new_file_name": "sign-error",
        "new_file_text": "import torch\nx = torch.tensor(3.0, requires_grad=True)\n",
        "wrong-new-file": "wrong/sign-error.py", "wrong-new-diagnosis": "sign-error",
    })  # fmt: skip

    bob.post(_action("author_save", "cube-gradient"), data)

    saved = _draft_files("cube-gradient")
    manifest = tomllib.loads(saved["exercise.toml"])
    assert manifest["title"] == "Cubes"
    assert saved["solution.py"].endswith("# checked\n")
    assert saved["wrong/sign-error.py"].startswith("import torch")
    assert manifest["wrong"][-1] == {"file": "wrong/sign-error.py", "diagnosis": "sign-error"}


def test_an_invalid_toml_save_is_kept_and_the_page_names_the_file_and_field(bob: Any) -> None:
    _create(bob)
    files = _draft_files("cube-gradient")
    toml_text = files["exercise.toml"].replace("points = 10", "points = 9")

    response = bob.post(_action("author_save_toml", "cube-gradient"), {"toml": toml_text},
                        follow=True)  # fmt: skip

    page = response.content.decode()
    assert "cube-gradient/exercise.toml: points: is 9 but the checks&#x27; points sum to 10" in page
    assert 'id="package-problem"' in page
    assert _draft_files("cube-gradient")["exercise.toml"] == toml_text


def test_the_problem_names_the_line_the_editor_marks_and_every_file_gets_its_language(
    bob: Any,
) -> None:
    _create(bob)
    files = _draft_files("cube-gradient")
    toml_text = files["exercise.toml"].replace('target = "y"', 'target = "z"')

    page = bob.post(_action("author_save_toml", "cube-gradient"), {"toml": toml_text},
                    follow=True).content.decode()  # fmt: skip

    line = toml_text.splitlines().index('target = "z"') + 1
    assert f'data-file="exercise.toml" data-line="{line}"' in page
    assert f"Show line {line} of exercise.toml" in page
    assert 'aria-label="exercise.toml" data-language="toml" data-path="exercise.toml"' in page
    assert 'aria-label="statement.md" data-language="markdown"' in page
    assert 'data-path="solution.py" data-language="python"' in page
    assert "web/vendor/codemirror/authoring-editor.js" in page


def _running_validation(slug: str, outcome: dict[str, Any]) -> None:
    from courses.models import ExerciseJob

    ExerciseJob.objects.filter(exercise__slug=slug).update(status="running", outcome=outcome)


def _partial_outcome() -> dict[str, Any]:
    from authoring.validation import MutantRow, ValidationOutcome, ValidationRow, outcome_json

    return outcome_json(ValidationOutcome(
        ok=False,
        rows=(
            ValidationRow("reference: solution.py", "10/10", "10/10", True),
            ValidationRow("wrong: wrong/forgot-requires-grad.py", "fails with graph-broken",
                          "0/10 failing 'y' [sign-error]", False),
        ),
        mutants=(MutantRow("flip-sign@4", "flips a sign", "survived", "10/10",
                           "-y = x**3\n+y = -x**3", False),),
        mutant_counts={"generated": 1, "caught": 0, "equivalent": 0, "survived": 1, "error": 0},
        pending=5,
    ))  # fmt: skip


def test_a_running_validation_shows_the_rows_so_far_and_how_many_are_to_come(
    bob: Any,
) -> None:
    _create(bob)
    bob.post(_action("author_validate", "cube-gradient"))
    _running_validation("cube-gradient", _partial_outcome())

    status = bob.get(reverse("web:author_validation", args=[MODULE_SLUG, "cube-gradient"])).json()

    html = status["html"]
    assert status["pending"] is True
    assert 'data-done="3" data-pending="5"' in html and "5 to come" in html
    assert 'data-run="wrong: wrong/forgot-requires-grad.py"' in html and "not as declared" in html
    assert 'data-mutant="flip-sign@4" data-outcome="survived"' in html
    assert "So far 1 graded" in html and "Valid:" not in html and "Not valid" not in html


def test_the_statement_preview_is_sanitised_like_the_learner_page(bob: Any, catalog: Any) -> None:
    url = reverse("web:author_statement_preview", args=[MODULE_SLUG, E2E_SLUG])

    html = bob.post(url, {"statement": "# Hi $x^2$\n\n<script>alert(1)</script>"}).json()["html"]

    assert "<h1>Hi $x^2$</h1>" in html
    assert "<script>" not in html
    assert "What is checked (10 points)" in html  # generated from the draft's manifest


def test_the_statement_preview_puts_the_checks_table_of_the_saved_manifest_at_the_marker(
    bob: Any,
) -> None:
    _create(bob)
    url = reverse("web:author_statement_preview", args=[MODULE_SLUG, "cube-gradient"])

    html = bob.post(url, {"statement": "# Cubes\n\n<!-- checks -->\n\nGood luck.\n"}).json()
    stale = bob.post(url, {"statement": "# Cubes\n\n## What is checked\n"}).json()

    before, after = html["html"].split("<h2>What is checked (10 points)</h2>")
    assert "<h1>Cubes</h1>" in before and "<p>Good luck.</p>" in after
    assert "<td>x.grad is dy/dx = 3x^2</td>\n<td>6</td>" in after
    assert stale["html"] == "<h1>Cubes</h1>\n<h2>What is checked</h2>"  # shown as written


def test_validate_starts_a_job_the_status_endpoint_shows_and_publish_is_refused(
    bob: Any,
) -> None:
    _create(bob)

    bob.post(_action("author_validate", "cube-gradient"))
    status = bob.get(reverse("web:author_validation", args=[MODULE_SLUG, "cube-gradient"]))
    refused = bob.post(_action("author_publish", "cube-gradient"), follow=True)

    assert status.json()["status"] == "queued" and status.json()["pending"] is True
    assert "Validation of draft" in status.json()["html"]
    assert "Not published: Its validation is still running" in refused.content.decode()


def test_trying_a_draft_as_a_learner_makes_a_preview_submission_the_author_sees(
    bob: Any,
) -> None:
    from submissions.models import Submission

    _create(bob)
    url = reverse("web:author_try", args=[MODULE_SLUG, "cube-gradient"])
    page = bob.get(url).content.decode()

    response = bob.post(url, {"code": "import torch\n"})

    submission = Submission.objects.get()
    assert "counts nowhere" in page and "Describe the task here" in page
    assert response["Location"] == reverse("web:submission", args=[submission.pk])
    assert submission.preview and submission.version.number is None
    assert bob.get(response["Location"]).status_code == 200


def test_the_diff_page_shows_the_draft_against_the_published_version(bob: Any) -> None:
    files = _draft_files(E2E_SLUG)
    bob.post(_action("author_save", E2E_SLUG), _form_post("", files, **{
        "file:statement.md": files["statement.md"] + "\nA new hint.\n"}))  # fmt: skip

    editor = bob.get(_editor(E2E_SLUG)).content.decode()
    diff = bob.get(
        reverse("web:author_diff", args=[MODULE_SLUG, E2E_SLUG]) + "?from=current&to=draft"
    )

    assert 'id="diff-link"' in editor
    assert "+A new hint." in diff.content.decode()
    assert 'data-path="statement.md"' in diff.content.decode()


def test_a_module_downloads_and_an_upload_becomes_drafts(bob: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    download = bob.get(reverse("web:author_module_archive", args=[MODULE_SLUG]) + "?type=zip")
    files = archive.read_archive(download.content)
    files[f"{E2E_SLUG}/statement.md"] += "\nImported.\n"
    upload = SimpleUploadedFile("m.zip", archive.write_archive(files, "zip"))

    response = bob.post(_action("author_upload_archive"), {"archive": upload}, follow=True)

    assert download["Content-Type"] == "application/zip"
    assert "Imported" in response.content.decode()
    assert _draft_files(E2E_SLUG)["statement.md"].endswith("\nImported.\n")


def test_a_hostile_upload_shows_the_refusal_and_changes_nothing(bob: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("evil.zip", archive.write_archive({"run.sh": "rm -rf /\n"}, "zip"))

    response = bob.post(_action("author_upload_archive"), {"archive": upload}, follow=True)

    assert "evil.zip/run.sh: unknown file" in response.content.decode()


def test_an_upload_declaring_a_256_mib_long_name_shows_the_refusal(bob: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from courses.models import Exercise

    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, 256 * 1024 * 1024
    data = gzip.compress(info.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 1024 * 1024)
    before = Exercise.objects.count()

    upload = SimpleUploadedFile("evil.tar.gz", data)

    response = bob.post(_action("author_upload_archive"), {"archive": upload}, follow=True)

    assert response.status_code == 200
    assert "evil.tar.gz: a GNU long name of 268435456 bytes" in response.content.decode()
    assert Exercise.objects.count() == before


def test_dates_are_set_on_the_page(bob: Any) -> None:
    from courses.models import Exercise

    bob.post(_action("author_schedule", E2E_SLUG), {"release_at": "",
                                                    "due_at": "2026-12-24T18:00"})  # fmt: skip

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    assert (
        exercise.due_at is not None and exercise.due_at.isoformat() == "2026-12-24T18:00:00+00:00"
    )
    assert exercise.late_counts is False and exercise.release_at is None


def test_the_teach_page_starts_a_regrade_preview_job(bob: Any) -> None:
    from courses.models import ExerciseJob

    url = reverse("web:regrade_preview", args=[MODULE_SLUG, E2E_SLUG])

    response = bob.post(url)

    job = ExerciseJob.objects.get()
    assert response.status_code == 302
    assert (job.kind, job.status) == ("regrade-preview", "queued")
    page = bob.get(reverse("web:teach_exercise", args=[MODULE_SLUG, E2E_SLUG])).content.decode()
    assert 'id="regrade-preview-result"' in page


def test_a_function_exercise_is_created_from_its_scaffold(bob: Any) -> None:
    response = bob.post(_action("author_create_exercise"), {"slug": "cube-grad",
                                                            "kind": "function"})  # fmt: skip

    files = _draft_files("cube-grad")
    assert response.status_code == 302
    assert 'kind = "function"' in files["exercise.toml"] and "cases.py" in files
    page = bob.get(_editor("cube-grad")).content.decode()
    assert 'id="package-problem"' not in page


def test_a_function_exercise_gets_its_cases_file_from_the_page(bob: Any) -> None:
    _create(bob)
    files = _draft_files("cube-gradient")
    cases = "def make_cases(seed, trials):\n    return []\n"

    bob.post(_action("author_save", "cube-gradient"), _form_post("", files, **{
        "new_file_kind": "cases.py", "new_file_text": cases}))  # fmt: skip

    from authoring.services import draft_get
    from courses.models import Exercise

    assert _draft_files("cube-gradient")["cases.py"] == cases
    problem = draft_get(exercise=Exercise.objects.get(slug="cube-gradient")).problem
    assert problem.endswith("kind: script exercises have no cases.py")  # until kind changes

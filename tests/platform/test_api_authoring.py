"""The authoring API (/api/v1/authoring/) with real requests and personal tokens: modules,
drafts, archives, validation jobs, publishing, schedules, members, diffs; who may do what.
The validation job runs in a worker in test_authoring_worker.py; here no worker listens,
and a finished job row stands for one where publishing is under test."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG, persona
from platform_helpers import E2E_SLUG

from grader.authoring import archive

pytestmark = pytest.mark.django_db

BASE = "/api/v1/authoring"
MODULE = f"{BASE}/modules/{MODULE_SLUG}"
CUBE = f"{MODULE}/exercises/cube-gradient"


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-authoring-api-test"


@pytest.fixture
def bob(api: Any, bob_instructor: Any) -> Any:
    return api(bob_instructor)


@pytest.fixture
def cube(bob: Any) -> dict[str, Any]:
    response = bob.post(f"{MODULE}/exercises/", {"slug": "cube-gradient"}, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


@pytest.fixture
def rita(api: Any, catalog: Any) -> Any:
    return api(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))


def _finish_validation(job_id: int, *, ok: bool) -> None:
    from courses.models import ExerciseJob

    outcome = {"ok": ok, "rows": [], "error": "", "problems": 0 if ok else 1}
    ExerciseJob.objects.filter(pk=job_id).update(status="done", outcome=outcome)


# -- modules and exercises -------------------------------------------------------------------


def test_an_instructor_creates_a_module_and_lists_the_modules_they_author(bob: Any) -> None:
    created = bob.post(f"{BASE}/modules/", {"slug": "second", "title": "Second"}, format="json")

    listed = bob.get(f"{BASE}/modules/").json()

    assert created.status_code == 201
    assert created.json()["exercises"].endswith("/api/v1/authoring/modules/second/exercises/")
    assert {m["slug"] for m in listed} == {MODULE_SLUG, "second"}


def test_a_learner_may_not_create_a_module_nor_list_any(api: Any, alice_learner: Any) -> None:
    client = api(alice_learner)

    refused = client.post(f"{BASE}/modules/", {"slug": "mine", "title": "M"}, format="json")

    assert refused.status_code == 403
    assert client.get(f"{BASE}/modules/").json() == []


def test_a_new_exercise_is_a_draft_with_its_files_and_no_problem(bob: Any, cube: Any) -> None:
    listed = {e["slug"]: e for e in bob.get(f"{MODULE}/exercises/").json()}

    assert cube["problem"] == "" and cube["version"].startswith("draft ")
    assert set(cube["files"]) >= {"exercise.toml", "solution.py", "wrong/forgot-requires-grad.py"}
    assert "What is checked" in cube["statement_html"]
    assert listed["cube-gradient"]["published_version"] is None
    assert listed["cube-gradient"]["has_draft"] is True
    assert listed[E2E_SLUG]["published_version"] == 1


def test_saving_an_invalid_draft_keeps_it_and_names_the_file_and_field(bob: Any, cube: Any) -> None:
    files = dict(cube["files"])
    files["exercise.toml"] = files["exercise.toml"].replace(
        'type = "grad_history"', 'type = "gradd"'
    )

    saved = bob.put(f"{CUBE}/", {"files": files}, format="json")
    again = bob.get(f"{CUBE}/").json()

    assert saved.status_code == 200
    assert saved.json()["problem"].startswith("cube-gradient/exercise.toml: checks[0].type")
    line = files["exercise.toml"].splitlines().index('type = "gradd"') + 1
    assert saved.json()["problem_place"] == {
        "file": "exercise.toml", "line": line, "field": "checks[0].type",
    }  # fmt: skip
    assert again["files"]["exercise.toml"] == files["exercise.toml"]
    assert cube["problem_place"] is None


def test_a_draft_with_a_path_outside_the_package_is_a_400_naming_it(bob: Any, cube: Any) -> None:
    files = {**cube["files"], "../escape.py": "x = 1\n"}

    response = bob.put(f"{CUBE}/", {"files": files}, format="json")

    assert response.status_code == 400
    assert "paths with '..'" in response.json()["files"][0]


# -- validation and publishing -----------------------------------------------------------------


def test_publishing_waits_for_a_passed_validation_started_through_the_api(
    bob: Any, cube: Any
) -> None:
    before = bob.post(f"{CUBE}/publish/")
    started = bob.post(f"{CUBE}/validate/")
    job_url = started.json()["url"]
    while_queued = bob.post(f"{CUBE}/publish/")
    _finish_validation(started.json()["id"], ok=True)

    published = bob.post(f"{CUBE}/publish/")

    assert before.status_code == 409 and "Validate this content" in before.json()["detail"]
    assert started.status_code == 202 and started["Location"] == job_url
    assert started.json()["content_hash"] == cube["content_hash"]
    assert while_queued.status_code == 409
    assert published.status_code == 200 and published.json()["number"] == 1
    assert bob.get(job_url).json()["outcome"]["ok"] is True
    assert bob.get(f"{MODULE}/exercises/").json()[-1]["published_version"] == 1


def test_a_running_validation_reads_back_its_rows_so_far(bob: Any, cube: Any) -> None:
    from authoring.validation import ValidationOutcome, ValidationRow, outcome_json
    from courses.models import ExerciseJob

    started = bob.post(f"{CUBE}/validate/").json()
    reference = ValidationRow("reference: solution.py", "10/10", "10/10", True)
    partial = outcome_json(ValidationOutcome(ok=False, rows=(reference,), pending=7))
    ExerciseJob.objects.filter(pk=started["id"]).update(status="running", outcome=partial)

    job = bob.get(started["url"]).json()
    refused = bob.post(f"{CUBE}/publish/")

    assert job["status"] == "running"
    assert job["outcome"]["rows"][0]["name"] == "reference: solution.py"
    assert (job["outcome"]["runs_done"], job["outcome"]["pending"]) == (1, 7)
    assert refused.status_code == 409 and "still running" in refused.json()["detail"]


def test_a_new_function_exercise_is_a_draft_of_the_function_scaffold(bob: Any) -> None:
    created = bob.post(f"{MODULE}/exercises/", {"slug": "cube-grad", "kind": "function"},
                       format="json")  # fmt: skip
    refused = bob.post(f"{MODULE}/exercises/", {"slug": "cube-cls", "kind": "class"},
                       format="json")  # fmt: skip

    assert created.status_code == 201 and created.json()["problem"] == ""
    assert "cases.py" in created.json()["files"]
    assert refused.status_code == 400 and "kind" in refused.json()


def test_a_failed_validation_is_read_back_and_refuses_publishing(bob: Any, cube: Any) -> None:
    started = bob.post(f"{CUBE}/validate/").json()
    _finish_validation(started["id"], ok=False)

    draft = bob.get(f"{CUBE}/").json()
    refused = bob.post(f"{CUBE}/publish/")

    assert draft["validation"]["status"] == "done"
    assert draft["validation"]["outcome"]["ok"] is False
    assert refused.status_code == 409 and "validation failed" in refused.json()["detail"]


def test_unpublishing_hides_the_exercise_from_the_learner_api(
    bob: Any, api: Any, alice_learner: Any
) -> None:
    learner = api(alice_learner)
    assert learner.get(f"/api/v1/exercises/{E2E_SLUG}/").status_code == 200

    response = bob.post(f"{MODULE}/exercises/{E2E_SLUG}/unpublish/")

    assert response.status_code == 204
    assert learner.get(f"/api/v1/exercises/{E2E_SLUG}/").status_code == 404


def test_a_schedule_is_set_and_a_due_date_before_the_release_is_a_400(bob: Any) -> None:
    url = f"{MODULE}/exercises/{E2E_SLUG}/schedule/"

    bad = bob.put(url, {"release_at": "2026-12-10T00:00:00Z", "due_at": "2026-12-01T00:00Z"},
                  format="json")  # fmt: skip
    good = bob.put(url, {"due_at": "2026-12-20T12:00:00Z", "late_counts": False}, format="json")

    assert bad.status_code == 400 and "due_at" in bad.json()
    assert good.status_code == 200
    assert (good.json()["due_at"], good.json()["late_counts"]) == ("2026-12-20T12:00:00Z", False)


def test_the_diff_lists_what_the_draft_changed(bob: Any) -> None:
    url = f"{MODULE}/exercises/{E2E_SLUG}/"
    files = bob.get(url).json()["files"]
    files["statement.md"] += "\nOne more hint.\n"
    bob.put(url, {"files": files}, format="json")

    diff = bob.get(f"{url}diff/?from=1&to=draft").json()

    assert [(d["path"], d["status"]) for d in diff] == [("statement.md", "changed")]
    assert "+One more hint." in diff[0]["diff"]


# -- archives ---------------------------------------------------------------------------------


def test_the_module_downloads_as_zip_and_tar_gz_with_the_layout_of_exercises(bob: Any) -> None:
    from courses.models import Module
    from courses.services import module_export

    for kind in archive.FORMATS:
        response = bob.get(f"{MODULE}/archive/?type={kind}")

        assert response.status_code == 200
        assert response["Content-Type"] == archive.CONTENT_TYPES[kind]
        assert f'filename="{MODULE_SLUG}.{kind}"' in response["Content-Disposition"]
        module = Module.objects.get(slug=MODULE_SLUG)
        assert response.content == module_export(module=module, kind=kind)
        assert "module.toml" in archive.read_archive(response.content)


def test_an_uploaded_archive_becomes_drafts_and_round_trips_the_download(
    bob: Any, cube: Any
) -> None:
    download = bob.get(f"{CUBE}/archive/?type=zip")
    files = archive.read_archive(download.content)
    files["cube-gradient/statement.md"] += "\nEdited offline.\n"

    uploaded = bob.post(
        f"{MODULE}/archive/", archive.write_archive(files, "zip"), content_type="application/zip"
    )

    assert uploaded.status_code == 200, uploaded.content
    assert [d["problem"] for d in uploaded.json()] == [""]
    again = archive.read_archive(bob.get(f"{CUBE}/archive/?type=tar.gz").content)
    assert again == files


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("/etc/passwd", "absolute paths are not allowed"),
        ("cube-gradient/../../x.py", "paths with '..' are not allowed"),
        ("cube-gradient/run.sh", "unknown file"),
    ],
)
def test_a_hostile_upload_is_a_400_naming_the_entry(
    bob: Any, catalog: Any, entry: str, message: str
) -> None:
    from courses.models import Exercise

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as handle:
        handle.writestr(entry, "x = 1\n")

    response = bob.post(f"{MODULE}/archive/", out.getvalue(), content_type="application/zip")

    assert response.status_code == 400
    assert message in response.json()["archive"][0] and entry in response.json()["archive"][0]
    assert not Exercise.objects.filter(slug="cube-gradient").exists()


def _cve_2024_6232_upload() -> bytes:
    """A .tar.gz of a few hundred bytes whose 128 KiB PAX header made tarfile 3.11.7's
    regex quadratic: seconds of a web worker's CPU before the fix."""
    records = b"2 " * 65_536 + b"="
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, len(records)
    padding = b"\0" * (-len(records) % tarfile.BLOCKSIZE)
    return gzip.compress(info.tobuf(tarfile.USTAR_FORMAT) + records + padding + b"\0" * 1024)


def test_the_cve_2024_6232_upload_is_a_400_saying_why_and_changes_nothing(
    bob: Any, catalog: Any
) -> None:
    from courses.models import Exercise

    before = Exercise.objects.count()

    response = bob.post(
        f"{MODULE}/archive/", _cve_2024_6232_upload(), content_type="application/gzip"
    )

    assert response.status_code == 400
    message = response.json()["archive"][0]
    assert "upload: a PAX header of 131073 bytes (at most 4096 are allowed)" in message
    assert Exercise.objects.count() == before


def test_an_unknown_archive_type_is_a_400(bob: Any) -> None:
    response = bob.get(f"{MODULE}/archive/?type=rar")

    assert response.status_code == 400 and "type" in response.json()


def test_an_upload_that_is_not_an_archive_is_a_400(bob: Any, catalog: Any) -> None:
    response = bob.post(f"{MODULE}/archive/", b"hello", content_type="application/gzip")

    assert response.status_code == 400
    assert "not a .tar.gz or .zip archive" in response.json()["archive"][0]


# -- who may do what -----------------------------------------------------------------------------


def test_a_reviewer_reads_validates_and_downloads_but_cannot_save_or_publish(
    rita: Any, cube: Any
) -> None:
    assert rita.get(f"{CUBE}/").status_code == 200
    assert rita.get(f"{CUBE}/archive/").status_code == 200
    assert rita.post(f"{CUBE}/validate/").status_code == 202
    assert rita.put(f"{CUBE}/", {"files": cube["files"]}, format="json").status_code == 403
    assert rita.post(f"{CUBE}/publish/").status_code == 403
    assert rita.post(f"{MODULE}/exercises/", {"slug": "x"}, format="json").status_code == 403


def test_an_instructor_adds_a_reviewer_by_name(bob: Any, api: Any, catalog: Any) -> None:
    persona("rita_reviewer")

    response = bob.post(f"{MODULE}/members/", {"username": "rita_reviewer", "role": "reviewer"},
                        format="json")  # fmt: skip

    assert response.status_code == 204
    assert api(persona("rita_reviewer")).get(f"{MODULE}/exercises/").status_code == 200


@pytest.mark.parametrize("who", ["alice_learner", "carol_other_course"])
def test_a_learner_and_another_modules_instructor_get_403_everywhere(
    request: Any, api: Any, cube: Any, who: str
) -> None:
    client = api(request.getfixturevalue(who))

    answers = [
        client.get(f"{MODULE}/exercises/").status_code,
        client.get(f"{CUBE}/").status_code,
        client.get(f"{CUBE}/archive/").status_code,
        client.get(f"{MODULE}/archive/").status_code,
        client.post(f"{CUBE}/validate/").status_code,
        client.post(f"{CUBE}/publish/").status_code,
    ]

    assert answers == [403] * 6


def test_an_unknown_module_or_exercise_is_a_404(bob: Any) -> None:
    assert bob.get(f"{BASE}/modules/nope/exercises/").status_code == 404
    assert bob.get(f"{MODULE}/exercises/nope/").status_code == 404


def test_course_tokens_cannot_author(bob_instructor: Any, catalog: Any) -> None:
    from rest_framework.test import APIClient

    from integrations.tokens import course_token_create

    issued = course_token_create(
        creator=bob_instructor, module=catalog, name="ci", scopes=["exercises:read"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")

    response = client.get(f"{MODULE}/exercises/")

    assert response.status_code == 403
    assert "Course tokens cannot be used on this endpoint" in response.json()["detail"]


def test_the_openapi_schema_describes_the_authoring_endpoints(bob: Any) -> None:
    schema = bob.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()

    paths = schema["paths"]
    assert "/api/v1/authoring/modules/{module}/exercises/{slug}/publish/" in paths
    assert (
        "409"
        in paths["/api/v1/authoring/modules/{module}/exercises/{slug}/publish/"]["post"][
            "responses"
        ]
    )
    upload = paths["/api/v1/authoring/modules/{module}/archive/"]["post"]["requestBody"]
    assert "application/zip" in upload["content"]

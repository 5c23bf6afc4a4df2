"""Learning objectives and mastery (submissions.mastery): a learner's mastery per objective
from the tagged checks of their latest graded submissions, the class's, the objectives with
the most failures and the diagnoses behind them; the API (own, one learner's, the class's)
for learner, instructor, co-instructor, staff and stranger; the pages; authoring the
module's objectives. Submissions are graded through the worker's own claim and final write
with reports whose checks are the real manifests' (no worker runs here)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import EXERCISES, MODULE_SLUG, persona

from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.protocol import CheckResult, IntegrityFlag, Report
from grader.spec import load_package

pytestmark = pytest.mark.django_db

API = f"/api/v1/modules/{MODULE_SLUG}/mastery"
GRAPH_BROKEN = DIAGNOSES["graph-broken"].title
# chain-rule's checks: 0 x.grad (4 points: chain-rule, read-grad), 1-2 values (1 each:
# chain-rule), 3-4 graph (1 each: chain-rule, computation-graph), 5 backward calls (1:
# backward), 6 no error (1: chain-rule). first-gradient's: 0 x.grad (5: backward,
# read-grad), 1 value (1: backward), 2 graph (2: computation-graph), 3-4 (1 each: backward).


@pytest.fixture(autouse=True)
def _no_worker_listens(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-mastery-test"


def report(slug: str, failing: Mapping[int, str] = {}, *, flagged: bool = False) -> Report:
    """A graded report of `slug` whose checks at the indices of `failing` fail with the
    given diagnosis and all others pass."""
    checks = tuple(
        CheckResult(
            spec.name, i not in failing, 0.0 if i in failing else float(spec.points),
            float(spec.points), "", failing.get(i, ""), "",
        )
        for i, spec in enumerate(load_package(EXERCISES / slug).manifest.checks)
    )  # fmt: skip
    score = sum(c.score for c in checks)
    flags = (IntegrityFlag("tamper", "ctypes"),) if flagged else ()
    maximum = float(sum(c.max_score for c in checks))
    return Report(status="graded", score=score, max_score=maximum, passed=score == maximum,
                  checks=checks, integrity_flags=flags)  # fmt: skip


def graded(learner: Any, slug: str, result: Report, *, preview: bool = False) -> Any:
    """A submission of `slug` graded with `result` through the worker's claim and write."""
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    submission, _ = submission_create(learner=learner, exercise_slug=slug, code="x = 1")
    if preview:
        Submission.objects.filter(pk=submission.pk).update(preview=True)
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, result)
    return Submission.objects.get(pk=submission.pk)


def by_id(rows: Any) -> dict[str, Any]:
    return {row.objective: row for row in rows}


def mine(learner: Any) -> dict[str, Any]:
    from courses.models import Module
    from submissions.mastery import learner_mastery

    module = Module.objects.get(slug=MODULE_SLUG)
    return by_id(learner_mastery(module=module, user=learner))


# -- the definition ----------------------------------------------------------------------


def test_mastery_is_the_share_of_an_objectives_points_passed_in_the_latest_submissions(
    alice_learner: Any,
) -> None:
    failed = graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    graded(alice_learner, "first-gradient", report("first-gradient"))

    rows = mine(alice_learner)

    read = rows["read-grad"]  # chain-rule's x.grad (4, failed) + first-gradient's (5)
    assert (read.points, read.passed_points, read.mastery) == (9.0, 5.0, 5 / 9)
    assert read.status == "not-yet" and read.exercises_tried == 2
    (failure,) = read.failures
    assert (failure.submission_id, failure.exercise, failure.order) == (failed.pk, "chain-rule", 0)
    assert (failure.diagnosis, failure.diagnosis_title) == ("graph-broken", GRAPH_BROKEN)
    assert rows["chain-rule"].mastery == 5 / 9  # 4 of its 9 points were x.grad's
    assert (rows["backward"].mastery, rows["backward"].status) == (1.0, "shown")
    assert rows["computation-graph"].points == 4.0 and rows["computation-graph"].failures == ()
    untried = rows["training-loop"]
    assert (untried.mastery, untried.status, untried.exercises_tried) == (None, "no-evidence", 0)
    assert untried.exercises == 1  # the catalog's training-loop exercise tests it


def test_the_latest_graded_submission_counts_not_the_best(alice_learner: Any) -> None:
    graded(alice_learner, "chain-rule", report("chain-rule"))
    graded(alice_learner, "chain-rule", report("chain-rule", {5: "freed-graph"}))

    backward = mine(alice_learner)["backward"]

    assert (backward.points, backward.passed_points) == (1.0, 0.0)
    assert [f.diagnosis for f in backward.failures] == ["freed-graph"]


def test_previews_and_held_submissions_do_not_count_and_a_failed_run_passes_nothing(
    alice_learner: Any,
) -> None:
    graded(alice_learner, "chain-rule", report("chain-rule"))
    graded(alice_learner, "chain-rule", report("chain-rule", {0: "sign-error"}), preview=True)
    graded(alice_learner, "chain-rule", report("chain-rule", {0: "sign-error"}, flagged=True))
    assert mine(alice_learner)["read-grad"].mastery == 1.0

    run_failed = Report(status="failed", score=0.0, max_score=10.0, passed=False,
                        message="time limit of 10 s exceeded")  # fmt: skip
    graded(alice_learner, "first-gradient", run_failed)

    read = mine(alice_learner)["read-grad"]
    assert (read.points, read.passed_points) == (9.0, 4.0)
    assert [(f.exercise, f.diagnosis, f.diagnosis_title) for f in read.failures] == [
        ("first-gradient", "", "no result (the run failed or was rejected)")
    ]


def test_the_class_mastery_counts_learners_only_and_ranks_the_objectives_by_failures(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    from courses.models import Module
    from submissions.mastery import class_mastery

    graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    dave = graded(dave_learner, "chain-rule", report("chain-rule", {0: "graph-broken", 3: "x"}))
    graded(dave_learner, "first-gradient", report("first-gradient"))
    graded(bob_instructor, "first-gradient", report("first-gradient", {0: "sign-error"}))

    result = class_mastery(module=Module.objects.get(slug=MODULE_SLUG))
    rows = by_id(result.objectives)

    assert result.learners == 2
    read = rows["read-grad"]  # alice 0/4, dave 5/9: bob's try is not the class's
    assert (read.learners, read.learners_shown, read.failures) == (2, 0, 2)
    assert read.mastery == pytest.approx((0 + 5 / 9) / 2)
    (behind,) = read.diagnoses
    assert (behind.exercise, behind.diagnosis, behind.count) == ("chain-rule", "graph-broken", 2)
    assert behind.latest_submission_id == dave.pk
    assert [o.objective for o in result.most_failed][:2] == ["chain-rule", "read-grad"]
    assert rows["chain-rule"].failures == 3
    assert rows["backward"].learners_shown == 2 and rows["backward"].failures == 0
    assert rows["training-loop"].mastery is None


def test_tags_come_from_the_version_a_submission_was_graded_against(
    alice_learner: Any,
) -> None:
    from courses.models import Exercise

    graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    version = Exercise.objects.get(slug="chain-rule").current_version
    manifest = dict(version.manifest)
    manifest["checks"] = [{**c, "objectives": []} for c in manifest["checks"]]
    type(version).objects.filter(pk=version.pk).update(manifest=manifest)

    assert mine(alice_learner)["read-grad"].mastery is None  # that version tagged nothing


# -- the API: the same access rule as every other endpoint --------------------------------


def test_a_learner_reads_their_own_mastery_with_links_to_the_feedback(
    api: Any, alice_learner: Any
) -> None:
    failed = graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))

    response = api(alice_learner).get(f"{API}/")

    assert response.status_code == 200
    body = response.json()
    assert (body["module"], body["learner"], body["shown_at"]) == (
        MODULE_SLUG, "alice_learner", 0.8,
    )  # fmt: skip
    read = next(o for o in body["objectives"] if o["objective"] == "read-grad")
    assert (read["mastery"], read["status"], read["points"]) == (0.0, "not-yet", 4.0)
    assert read["failures"][0]["diagnosis"] == "graph-broken"
    assert read["failures"][0]["submission"] == failed.pk
    assert read["failures"][0]["submission_url"].endswith(f"/api/v1/submissions/{failed.pk}/")


def test_a_stranger_gets_404_for_a_module_they_are_not_enrolled_in(
    api: Any, alice_learner: Any
) -> None:
    stranger = persona("sid_stranger")
    assert api(stranger).get(f"{API}/").status_code == 404
    assert api(stranger).get("/api/v1/modules/no-such-module/mastery/").status_code == 404
    assert api(stranger).get(f"{API}/class/").status_code == 403
    assert api(stranger).get(f"{API}/learners/{alice_learner.pk}/").status_code == 403
    assert Client().get(f"{API}/").status_code in (401, 403)


def test_a_learner_may_not_read_the_class_or_another_learners_mastery(
    api: Any, alice_learner: Any, dave_learner: Any
) -> None:
    client = api(alice_learner)
    assert client.get(f"{API}/class/").status_code == 403
    assert client.get(f"{API}/learners/{dave_learner.pk}/").status_code == 403


@pytest.mark.parametrize("who", ["bob_instructor", "erin_co_instructor", "sam_staff"])
def test_instructors_co_instructors_and_staff_read_the_class_and_each_learner(
    api: Any, alice_learner: Any, who: str, request: pytest.FixtureRequest
) -> None:
    graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    client = api(request.getfixturevalue(who))

    whole = client.get(f"{API}/class/")
    one = client.get(f"{API}/learners/{alice_learner.pk}/")

    assert whole.status_code == 200 and one.status_code == 200
    assert whole.json()["most_failed"][:2] == ["chain-rule", "read-grad"]
    read = next(o for o in whole.json()["objectives"] if o["objective"] == "read-grad")
    assert read["diagnoses"][0]["title"] == GRAPH_BROKEN and read["learners"] == 1
    assert one.json()["learner"] == "alice_learner"
    assert client.get(f"{API}/learners/999999/").status_code == 404


def test_another_modules_instructor_may_not_read_this_class(
    api: Any, carol_other_course: Any
) -> None:
    assert api(carol_other_course).get(f"{API}/class/").status_code == 403


# -- the pages ---------------------------------------------------------------------------


def page(user: Any, name: str, *args: Any) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_the_module_page_shows_each_objective_with_the_diagnosis_linked_to_its_feedback(
    alice_learner: Any,
) -> None:
    broken = {0: "graph-broken", 3: "graph-broken"}
    failed = graded(alice_learner, "chain-rule", report("chain-rule", broken))

    html = page(alice_learner, "web:module", MODULE_SLUG)

    row = html.split('data-objective="read-grad"')[1].split("</tr>")[0]
    assert 'data-status="not-yet"' in row and "0%" in row
    assert f'href="/submissions/{failed.pk}/#check-{failed.pk}-0"' in row
    assert GRAPH_BROKEN in row
    feedback = page(alice_learner, "web:submission", failed.pk)
    assert f'id="check-{failed.pk}-0"' in feedback  # the link's target
    chain = html.split('data-objective="chain-rule"')[1].split("</tr>")[0]
    assert chain.count("<li>") == 1 and "(2 checks)" in chain  # one line per mistake
    backward = html.split('data-objective="backward"')[1].split("</tr>")[0]
    assert 'data-status="shown"' in backward and "100%" in backward


def test_the_instructor_page_ranks_objectives_by_failures_with_their_diagnoses(
    alice_learner: Any, bob_instructor: Any
) -> None:
    failed = graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))

    html = page(bob_instructor, "web:teach_module", MODULE_SLUG)

    most = html.split('id="most-failed"')[1].split("</p>")[0]
    assert most.index("#objective-chain-rule") < most.index("#objective-read-grad")
    row = html.split('id="objective-read-grad"')[1].split("</tr>")[0]
    assert f'href="/submissions/{failed.pk}/"' in row and "\u00d7 1" in row
    assert 'href="/teach/autograd-backprop/exercises/chain-rule/"' in row
    learner = page(bob_instructor, "web:teach_learner", MODULE_SLUG, alice_learner.pk)
    assert 'data-objective="read-grad" data-status="not-yet"' in learner


# -- on every database (make test runs this module on PostgreSQL and on SQLite) -----------


def test_an_older_failing_and_a_newer_passing_submission_count_as_the_newer_everywhere(
    api: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    """The module page (where / leads), the instructor's page and both mastery endpoints
    read the latest submission per learner and exercise: on SQLite, `make run`'s database,
    they were a 500 (DISTINCT ON)."""
    older = graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    graded(alice_learner, "chain-rule", report("chain-rule"))
    client = Client()
    client.force_login(alice_learner)

    home = client.get("/", follow=True)
    teach = page(bob_instructor, "web:teach_module", MODULE_SLUG)
    own = api(alice_learner).get(f"{API}/")
    whole = api(bob_instructor).get(f"{API}/class/")

    assert home.redirect_chain[-1][0] == reverse("web:module", args=[MODULE_SLUG])
    assert home.status_code == own.status_code == whole.status_code == 200
    row = home.content.decode().split('data-objective="read-grad"')[1].split("</tr>")[0]
    assert 'data-status="shown"' in row and "100%" in row and GRAPH_BROKEN not in row
    mine_read = next(o for o in own.json()["objectives"] if o["objective"] == "read-grad")
    assert (mine_read["mastery"], mine_read["failures"]) == (1.0, [])
    class_read = next(o for o in whole.json()["objectives"] if o["objective"] == "read-grad")
    assert (class_read["mastery"], class_read["learners"], class_read["failures"]) == (1.0, 1, 0)
    assert whole.json()["most_failed"] == []
    teach_row = teach.split('id="objective-read-grad"')[1].split("</tr>")[0]
    assert "100%" in teach_row and f"/submissions/{older.pk}/" not in teach


def test_the_latest_is_the_newest_by_creation_and_the_higher_id_breaks_a_tie(
    alice_learner: Any, dave_learner: Any
) -> None:
    from datetime import timedelta

    from courses.models import Module
    from submissions.mastery import class_mastery
    from submissions.models import Submission

    alice_new = graded(alice_learner, "chain-rule", report("chain-rule", {0: "graph-broken"}))
    alice_old = graded(alice_learner, "chain-rule", report("chain-rule"))
    Submission.objects.filter(pk=alice_old.pk).update(
        created_at=alice_new.created_at - timedelta(seconds=1)
    )  # the higher id, created earlier: the lower id is alice's latest
    dave_first = graded(dave_learner, "chain-rule", report("chain-rule"))
    dave_second = graded(dave_learner, "chain-rule", report("chain-rule", {0: "sign-error"}))
    Submission.objects.filter(pk=dave_second.pk).update(created_at=dave_first.created_at)

    alice = mine(alice_learner)["read-grad"]
    result = by_id(class_mastery(module=Module.objects.get(slug=MODULE_SLUG)).objectives)

    assert [f.submission_id for f in alice.failures] == [alice_new.pk]
    assert [f.submission_id for f in mine(dave_learner)["read-grad"].failures] == [dave_second.pk]
    assert (result["read-grad"].learners, result["read-grad"].failures) == (2, 2)
    assert {d.latest_submission_id for d in result["read-grad"].diagnoses} == {
        alice_new.pk, dave_second.pk,
    }  # fmt: skip


# -- authoring the objectives --------------------------------------------------------------


def test_objectives_are_replaced_in_order_and_one_still_tagged_cannot_be_removed(
    catalog: Any,
) -> None:
    from authoring.services import module_objectives_set
    from common.errors import InvalidInput
    from courses.selectors import module_objectives

    before = [{"id": o.id, "title": o.title} for o in module_objectives(catalog)]
    with pytest.raises(InvalidInput, match="backward: still tagged on checks of 'first-gradient'"):
        module_objectives_set(module=catalog, objectives=before[1:])
    with pytest.raises(InvalidInput, match=r"objectives\[1\]\.id: 'backward' is declared twice"):
        module_objectives_set(module=catalog, objectives=[before[0], before[0]])

    module_objectives_set(module=catalog, objectives=[*before[::-1], {"id": "new", "title": "N"}])

    ids = [o.id for o in module_objectives(catalog)]
    assert ids == [*(o["id"] for o in before[::-1]), "new"]


def test_a_draft_tagged_with_an_objective_the_module_lacks_names_the_check(
    bob_instructor: Any,
) -> None:
    from authoring.services import draft_save
    from courses.models import Exercise

    exercise = Exercise.objects.get(slug="chain-rule")
    files = dict(exercise.current_version.files)
    files["exercise.toml"] = files["exercise.toml"].replace('"read-grad"]', '"reading"]', 1)

    draft = draft_save(exercise=exercise, files=files, user=bob_instructor)

    assert draft.problem.startswith("chain-rule/exercise.toml: checks[0].objectives[1]: 'reading'")


def test_an_exported_module_toml_carries_changed_objectives_and_reads_back_the_same(
    catalog: Any,
) -> None:
    from authoring.services import module_objectives_set
    from courses.selectors import module_objectives
    from courses.services import module_export
    from grader import spec
    from grader.authoring import archive

    objectives = [{"id": o.id, "title": o.title} for o in module_objectives(catalog)]
    module_objectives_set(module=catalog, objectives=[*objectives, {"id": "x-y", "title": "Ω"}])

    files = archive.read_archive(module_export(module=catalog, kind="tar.gz"))
    exported = spec.parse_module(files["module.toml"], "module.toml")

    assert exported.objectives == module_objectives(catalog)
    assert exported.objectives[-1] == spec.Objective("x-y", "Ω")


def test_the_manifest_form_edits_a_checks_objectives_as_a_comma_separated_list() -> None:
    from web.manifest_form import apply_form, form_rows

    text = (EXERCISES / "first-gradient" / "exercise.toml").read_text(encoding="utf-8")
    rows = form_rows(text)
    assert rows is not None and rows.checks[0]["objectives"] == "backward, read-grad"
    form = {f"check-{i}-{k}": v for i, check in enumerate(rows.checks) for k, v in check.items()}
    form.update({**rows.fields, "names": rows.names, "check-count": str(len(rows.checks))})
    form.update({"check-0-objectives": " debugging ,backward,", "check-1-objectives": ""})

    checks = tomllib.loads(apply_form(text, form))["checks"]

    assert checks[0]["objectives"] == ["debugging", "backward"]
    assert "objectives" not in checks[1]
    assert checks[2]["objectives"] == ["computation-graph"]


def test_the_authoring_pages_edit_the_modules_objectives_and_list_them_by_the_checks(
    web: Any, bob_instructor: Any
) -> None:
    from courses.models import Module
    from courses.selectors import module_objectives

    bob = web(bob_instructor)
    author = reverse("web:author_module", args=[MODULE_SLUG])
    module = Module.objects.get(slug=MODULE_SLUG)
    lines = "".join(f"{o.id}: {o.title}\n" for o in module_objectives(module))
    assert lines in bob.get(author).content.decode()  # the textarea holds them, in order

    objectives = reverse("web:author_objectives", args=[MODULE_SLUG])
    saved = bob.post(objectives, {"objectives": lines + "\nautograd-api: X\n"})
    refused = bob.post(objectives, {"objectives": "no colon"}, follow=True)

    assert saved.status_code == 302
    assert module_objectives(module)[-1].id == "autograd-api"
    assert "line 1: write it as id: title" in refused.content.decode()
    editor = bob.get(reverse("web:author_exercise", args=[MODULE_SLUG, "chain-rule"]))
    listed = editor.content.decode().split('id="module-objectives"')[1].split("</p>")[0]
    assert '<code title="Use backward() to calculate derivatives">backward</code>' in listed
    assert 'value="chain-rule, read-grad"' in editor.content.decode()


def test_the_authoring_api_reads_and_replaces_the_objectives_for_instructors_only(
    api: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    url = f"/api/v1/authoring/modules/{MODULE_SLUG}/objectives/"
    bob = api(bob_instructor)
    current = bob.get(url).json()["objectives"]
    assert current[0] == {"id": "backward", "title": "Use backward() to calculate derivatives"}

    added = bob.put(url, {"objectives": [*current, {"id": "jvp", "title": "JVPs"}]}, format="json")
    twice = bob.put(url, {"objectives": [current[0], current[0]]}, format="json")
    dropped = bob.put(url, {"objectives": current[1:]}, format="json")

    assert added.status_code == 200 and added.json()["objectives"][-1]["id"] == "jvp"
    assert twice.status_code == 400 and "declared twice" in twice.json()["objectives"][0]
    assert dropped.status_code == 400 and "still tagged" in dropped.json()["objectives"][0]
    assert api(alice_learner).get(url).status_code == 403
    assert api(alice_learner).put(url, {"objectives": []}, format="json").status_code == 403


def test_the_class_mastery_reads_a_fixed_number_of_queries_whatever_the_class_size(
    catalog: Any, django_assert_max_num_queries: Any
) -> None:
    import time

    from submissions.mastery import class_mastery

    learners = [persona(f"learner{n:02d}", module_slug=MODULE_SLUG, role="learner")
                for n in range(12)]  # fmt: skip
    for n, learner in enumerate(learners):
        graded(learner, "chain-rule", report("chain-rule", {0: "graph-broken"} if n % 2 else {}))
        graded(learner, "first-gradient", report("first-gradient", {2: "wrong-type"}))
        graded(learner, "training-loop", report("training-loop"))

    started = time.perf_counter()
    with django_assert_max_num_queries(6):
        result = class_mastery(module=catalog)
    elapsed = time.perf_counter() - started

    print(f"class mastery: {len(learners)} learners x 3 exercises in {elapsed * 1000:.1f} ms")
    rows = by_id(result.objectives)
    assert rows["read-grad"].learners == 12 and rows["read-grad"].failures == 6
    assert rows["computation-graph"].diagnoses[0].count == 12  # first-gradient's graph check


def test_a_module_imported_as_a_copy_gains_the_objectives_its_checks_name(
    catalog: Any, bob_instructor: Any
) -> None:
    from authoring.services import module_archive_upload, module_create
    from courses.selectors import module_objectives
    from courses.services import module_export

    data = module_export(module=catalog, kind="tar.gz")
    copy = module_create(slug="autograd-copy", title="A copy", user=bob_instructor)

    drafts = module_archive_upload(
        module=copy, data=data, name="m.tar.gz", user=bob_instructor, copy=True
    )

    assert module_objectives(copy) == module_objectives(catalog)
    assert [d.problem for d in drafts] == ["", "", ""]


def test_a_submission_rejected_after_review_shows_no_objective(
    alice_learner: Any, bob_instructor: Any, catalog: Any
) -> None:
    from submissions.services import submission_review

    graded(alice_learner, "first-gradient", report("first-gradient"))
    held = graded(alice_learner, "first-gradient", report("first-gradient", flagged=True))
    assert mine(alice_learner)["backward"].mastery == 1.0  # the held one waits

    submission_review(
        submission_id=held.pk, module=catalog, reviewer=bob_instructor, decision="reject"
    )

    backward = mine(alice_learner)["backward"]
    assert (backward.points, backward.passed_points) == (8.0, 0.0)
    assert {f.diagnosis for f in backward.failures} == {""}
    assert {f.submission_id for f in backward.failures} == {held.pk}


def test_a_course_token_is_refused_by_every_mastery_endpoint(
    api: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    from rest_framework.test import APIClient

    made = api(bob_instructor).post(
        f"/api/v1/courses/{MODULE_SLUG}/tokens/",
        {"name": "script", "scopes": ["exercises:read", "submissions:read"]},
        format="json",
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {made.json()['token']}")

    for path in ("", "class/", f"learners/{alice_learner.pk}/"):
        assert client.get(f"{API}/{path}").status_code == 403, path

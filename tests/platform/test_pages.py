"""The pages' permissions, headers and escaping, through Django's test client (no browser).

Submissions here carry a stored report as the worker saves it (Report.to_json()); the
grading itself is exercised by the Chromium test and tests/platform.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from submissions.models import CheckResult, Submission

pytestmark = pytest.mark.django_db

MODULE = "autograd-backprop"
SCRIPT_PAYLOAD = "<script>alert('pwned')</script>"


def stored_report(*, stdout: str = "", exception: dict | None = None) -> dict[str, Any]:
    return {
        "status": "graded",
        "score": 4.0,
        "max_score": 10.0,
        "passed": False,
        "message": "",
        "checks": [
            {
                "name": "x.grad equals dz/dx = 60",
                "passed": False,
                "score": 0.0,
                "max_score": 4.0,
                "message": "x.grad is None: the gradient never reached x",
                "diagnosis": "graph-broken",
                "hint": "Create x with requires_grad=True.",
                "data": {"want": "tensor(60., dtype=float32)", "got": "None"},
            },
            {
                "name": "y equals 10",
                "passed": True,
                "score": 4.0,
                "max_score": 4.0,
                "message": "",
                "diagnosis": "",
                "hint": "",
                "data": {},
            },
        ],
        "stdout": stdout,
        "exception": exception,
        "curves": None,
        "duration_s": 0.5,
        "runtime": "bubblewrap torch-2.13.0 cpu",
    }


def make_submission(learner: Any, catalog: Any, **report: Any) -> Submission:
    exercise = catalog.exercises.get(slug="chain-rule")
    submission = Submission.objects.create(
        learner=learner,
        exercise=exercise,
        version=exercise.current_version,
        code="import torch\nx = torch.tensor(2.0)\n",
        status=Submission.Status.GRADED,
        score=4.0,
        max_score=10.0,
        passed=False,
        report=stored_report(**report),
    )
    CheckResult.objects.create(
        submission=submission, order=0, name="x.grad", passed=False, score=0, max_score=4,
        diagnosis="graph-broken",
    )  # fmt: skip
    return submission


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_signed_out_visitors_are_sent_to_the_sign_in_page(client: Client, catalog: Any) -> None:
    response = client.get(reverse("web:module", args=[MODULE]))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_learner_cannot_read_another_learners_submission(
    catalog: Any, alice_learner: Any, dave_learner: Any
) -> None:
    submission = make_submission(alice_learner, catalog)
    dave = client_for(dave_learner)
    assert dave.get(reverse("web:submission", args=[submission.pk])).status_code == 404
    assert dave.get(reverse("web:submission_status", args=[submission.pk])).status_code == 404
    alice = client_for(alice_learner)
    assert alice.get(reverse("web:submission", args=[submission.pk])).status_code == 200


def test_learner_never_sees_another_learners_code_on_the_exercise_page(
    catalog: Any, alice_learner: Any, dave_learner: Any
) -> None:
    make_submission(alice_learner, catalog)
    page = client_for(dave_learner).get(reverse("web:exercise", args=[MODULE, "chain-rule"]))
    assert page.status_code == 200
    assert "x = torch.tensor(2.0)\n</textarea>" not in page.content.decode()
    assert "No submissions yet." in page.content.decode()


def test_instructor_can_read_a_learners_submission(
    catalog: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    submission = make_submission(alice_learner, catalog)
    bob = client_for(bob_instructor)
    assert bob.get(reverse("web:submission", args=[submission.pk])).status_code == 200
    page = bob.get(reverse("web:teach_learner", args=[MODULE, alice_learner.pk]))
    assert page.status_code == 200
    assert f"#{submission.pk}" in page.content.decode()


@pytest.mark.parametrize(
    ("name", "args", "method"),
    [
        ("web:teach_module", [MODULE], "get"),
        ("web:grades_csv", [MODULE], "get"),
        ("web:teach_exercise", [MODULE, "chain-rule"], "get"),
        ("web:regrade_exercise", [MODULE, "chain-rule"], "post"),
        ("web:validate_exercise", [MODULE, "chain-rule"], "post"),
    ],
)
def test_non_instructor_cannot_open_statistics_csv_regrade_or_validation(
    catalog: Any, alice_learner: Any, name: str, args: list[str], method: str
) -> None:
    make_submission(alice_learner, catalog)
    client = client_for(alice_learner)
    response = getattr(client, method)(reverse(name, args=args))
    assert response.status_code == 403
    assert Submission.objects.get().score == 4.0  # nothing was regraded


def test_learner_page_of_another_module_member_is_not_found_for_the_wrong_module(
    catalog: Any, bob_instructor: Any
) -> None:
    bob = client_for(bob_instructor)
    assert bob.get(reverse("web:teach_learner", args=[MODULE, 999_999])).status_code == 404


def test_pages_carry_a_content_security_policy_without_inline_script(
    catalog: Any, alice_learner: Any
) -> None:
    alice = client_for(alice_learner)
    for url in (
        reverse("web:module", args=[MODULE]),
        reverse("web:exercise", args=[MODULE, "chain-rule"]),
        reverse("web:login"),
    ):
        response = alice.get(url)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "object-src 'none'" in policy
        html = response.content.decode()
        assert "<script>" not in html  # every script is a static file
        assert " on" + "click=" not in html


def test_printed_output_and_traceback_of_a_learner_are_escaped(
    catalog: Any, alice_learner: Any
) -> None:
    submission = make_submission(
        alice_learner,
        catalog,
        stdout=SCRIPT_PAYLOAD,
        exception={
            "type": "RuntimeError",
            "message": SCRIPT_PAYLOAD,
            "line": 3,
            "traceback": f'  File "submission.py", line 3\nRuntimeError: {SCRIPT_PAYLOAD}',
        },
    )
    alice = client_for(alice_learner)
    for response in (
        alice.get(reverse("web:submission", args=[submission.pk])),
        alice.get(reverse("web:exercise", args=[MODULE, "chain-rule"])),
    ):
        html = response.content.decode()
        assert SCRIPT_PAYLOAD not in html
        assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html
    status = alice.get(reverse("web:submission_status", args=[submission.pk])).json()
    assert SCRIPT_PAYLOAD not in status["feedback_html"]


def test_feedback_names_the_mistake_and_shows_expected_against_got(
    catalog: Any, alice_learner: Any
) -> None:
    submission = make_submission(alice_learner, catalog)
    html = client_for(alice_learner).get(reverse("web:submission", args=[submission.pk]))
    text = html.content.decode()
    assert "Gradient never reached this tensor" in text
    assert "Create x with requires_grad=True." in text
    assert "<code>tensor(60., dtype=float32)</code>" in text and "<code>None</code>" in text


def test_form_post_without_javascript_creates_a_submission_and_redirects_to_it(
    catalog: Any, alice_learner: Any, settings: Any
) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-web-test"  # no worker listens here
    alice = client_for(alice_learner)
    response = alice.post(
        reverse("web:exercise", args=[MODULE, "chain-rule"]), {"code": "print('hi')\n"}
    )
    submission = Submission.objects.get(learner=alice_learner)
    assert response.status_code == 302
    assert response["Location"] == reverse("web:submission", args=[submission.pk])
    assert submission.code == "print('hi')\n"


def test_form_post_rejects_empty_code_with_a_message(catalog: Any, alice_learner: Any) -> None:
    alice = client_for(alice_learner)
    url = reverse("web:exercise", args=[MODULE, "chain-rule"])
    page = alice.post(url, {"code": "   "})
    assert page.status_code == 400
    assert "Code must not be empty." in page.content.decode()
    json_reply = alice.post(url, {"code": ""}, headers={"Accept": "application/json"})
    assert json_reply.status_code == 400
    assert json_reply.json()["errors"]["code"]
    assert not Submission.objects.exists()


def test_submitting_requires_a_csrf_token(catalog: Any, alice_learner: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice_learner)
    response = client.post(
        reverse("web:exercise", args=[MODULE, "chain-rule"]), {"code": "print(1)\n"}
    )
    assert response.status_code == 403
    assert not Submission.objects.exists()


def test_grade_csv_lists_each_learners_best_score(
    catalog: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    make_submission(alice_learner, catalog)
    response = client_for(bob_instructor).get(reverse("web:grades_csv", args=[MODULE]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    header = lines[0].split(",")
    alice = next(line.split(",") for line in lines if line.startswith("alice_learner"))
    assert alice[header.index("chain-rule")] == "4"
    assert alice[header.index("first-gradient")] == ""


@pytest.mark.parametrize(
    "email",
    ["=HYPERLINK(\"http://x\")@a.org", "\t=HYPERLINK(1)@a.org", "\r=1+1@a.org", " +1@a.org",
     "-2@a.org", "@SUM(1)@a.org"],
    ids=["equals", "tab", "carriage-return", "blank-then-plus", "minus", "at"],
)  # fmt: skip
def test_grade_csv_neutralises_every_cell_a_spreadsheet_would_read_as_a_formula(
    catalog: Any, alice_learner: Any, bob_instructor: Any, email: str
) -> None:
    import csv
    import io

    alice_learner.email = email  # as an LMS's launch or roster may have set it
    alice_learner.save(update_fields=["email"])
    response = client_for(bob_instructor).get(reverse("web:grades_csv", args=[MODULE]))
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    alice = next(row for row in rows if row[0] == "alice_learner")
    assert alice[1] == "'" + email


def test_grade_csv_leaves_an_ordinary_email_as_it_is(
    catalog: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    import csv
    import io

    response = client_for(bob_instructor).get(reverse("web:grades_csv", args=[MODULE]))
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    alice = next(row for row in rows if row[0] == "alice_learner")
    assert alice[1] == alice_learner.email


def test_instructor_asks_for_a_validation_which_waits_for_a_worker(
    catalog: Any, bob_instructor: Any, settings: Any
) -> None:
    from courses.models import ExerciseJob

    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-web-test"  # no worker listens here
    bob = client_for(bob_instructor)
    url = reverse("web:teach_exercise", args=[MODULE, "chain-rule"])
    response = bob.post(reverse("web:validate_exercise", args=[MODULE, "chain-rule"]))
    assert response.status_code == 302 and response["Location"] == url
    job = ExerciseJob.objects.get()
    assert (job.kind, job.status, job.requested_by) == ("validate", "queued", bob_instructor)
    page = bob.get(url).content.decode()
    assert 'http-equiv="refresh"' in page  # follows the job without JavaScript
    assert "Queued" in page


def test_staff_user_may_open_the_instructor_pages_without_an_enrollment(
    catalog: Any, django_user_model: Any
) -> None:
    staff = django_user_model.objects.create_user(username="sam_staff", is_staff=True)
    response = client_for(staff).get(reverse("web:teach_module", args=[MODULE]))
    assert response.status_code == 200
    assert "Gradebook" in response.content.decode()


MUTATED = (
    "import torch\nx = torch.tensor(2.0, requires_grad=True)\n"
    "note = '<script>alert(1)</script>'\ny = x ** 2 - 1\ny.backward()\n"
)


def graded(passed: bool, diagnosis: str = "") -> Any:
    from grader.protocol import CheckResult, Report

    check = CheckResult("x.grad", passed, float(passed), 1.0, "", diagnosis, "")
    return Report(status="graded", score=float(passed), max_score=1.0, passed=passed,
                  checks=(check,))  # fmt: skip


def test_validation_page_shows_the_mutant_table_and_each_survivors_diff_escaped(
    catalog: Any, bob_instructor: Any
) -> None:
    from authoring.validation import outcome_json, outcome_of
    from courses.models import Exercise, ExerciseJob
    from grader.authoring.mutants import classify, generate
    from grader.authoring.validation import Validation, ValidationItem

    made = {m.name: m for m in generate(MUTATED)}
    results = (
        classify(graded(False, "sign-error"), made["flip-sign@4"], {}),
        classify(graded(True), made["item-mid-graph@4"], {}),
        classify(graded(True), made["detach-mid-graph@4"], {"detach-mid-graph@4": "x is data"}),
    )  # fmt: skip
    reference = ValidationItem("reference", "solution.py", True, "1/1", "1/1")
    validation = Validation("chain-rule", (reference,), results, MUTATED)
    exercise = Exercise.objects.get(slug="chain-rule")
    ExerciseJob.objects.create(
        exercise=exercise, version=exercise.current_version, kind="validate", status="done",
        outcome=outcome_json(outcome_of(validation)),
    )  # fmt: skip

    page = (
        client_for(bob_instructor)
        .get(reverse("web:teach_exercise", args=[MODULE, "chain-rule"]))
        .content.decode()
    )

    assert "Not valid: 1 problem." in page
    assert "3 generated: 1 caught, 1 declared equivalent, 1 survived." in page
    caught = page.split('data-mutant="flip-sign@4" data-outcome="caught"')[1].split("</tr>")[0]
    assert "✓ caught</span>: sign-error" in caught and "mutant-diff" not in caught
    survivor = page.split('data-outcome="survived"')[1].split("</tr>")[0]
    assert "✗ survived</span> with 1/1" in survivor
    assert '<del class="diff-del">-y = x ** 2 - 1</del>' in survivor
    assert "+y = __import__(&#x27;torch&#x27;).as_tensor((x ** 2 - 1).tolist())" in survivor
    assert "note = &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;" in survivor  # context line
    assert "<script>alert(1)" not in page
    equivalent = page.split('data-outcome="equivalent"')[1].split("</tr>")[0]
    assert "= declared equivalent</span>: x is data" in equivalent
    assert "<details><summary>what it changes</summary>" in equivalent

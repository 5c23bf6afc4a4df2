"""A hidden data line (FORMAT.md section 2, "Which data"; exercise.toml `[data_line]`): in
training-loop's second run the training targets move from y = 2x + 1 to a line drawn per
submission, so the learned `w` and `b` are judged at values the code cannot know before it
runs. Before, they converged to the public 2 and 1 from any start, and all ten points rested
on what the code reported. Honest code keeps full marks whatever it names its data; a loop
that fits the plain line fails; targets the start cannot find keep the plain line, as a
claim. The sandbox tests grade real code in the real sandbox."""

from __future__ import annotations

import ast

import pytest
from conftest import GradeCode
from grading_helpers import package_at

from grader.protocol import ExerciseError
from grader.rewrite import GRID, LINE_FIT, Start, draw_starts, line_moved, line_start, rewrite
from grader.runs.second import SCALED, missing_reason
from grader.spec import DataLine, Package, PackageError, parse_manifest

LINE = DataLine(target="y", input="x", slope=2.0, intercept=1.0)
HEADER = "import torch\n\n"
SGD_LOOP = (
    "w = torch.tensor(0.0, requires_grad=True)\nb = torch.tensor(0.0, requires_grad=True)\n"
    "optimizer = torch.optim.SGD([w, b], lr=0.1)\n"
    "for step in range(200):\n    optimizer.zero_grad()\n"
    "    loss = ((w * x + b - y) ** 2).mean()\n    loss.backward()\n    optimizer.step()\n"
    "    print(loss.item())\n"
)
LEARNED = ("learned w is close to 2", "learned b is close to 1")

# -- honest code, whatever it calls its data ----------------------------------------------

# Targets typed in as numbers beside `x` are the course package's nn-linear-course-notes
# alternative (tests/exercises/test_course_packages.py grades it).
HONEST = [
    ("other-names-a-module-and-2d-data", HEADER + (
        "inputs = torch.linspace(0.0, 2.0, 16).unsqueeze(1)\ntargets = 2.0 * inputs + 1.0\n"
        "model = torch.nn.Linear(1, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(600):\n    optimizer.zero_grad()\n"
        "    loss = torch.nn.functional.mse_loss(model(inputs), targets)\n"
        "    loss.backward()\n    optimizer.step()\n    print(epoch, loss.item())\n"
    )),
    ("data-from-a-function-and-a-tuple", HEADER + (
        "def make_data(n):\n    x = torch.linspace(-1.0, 1.0, n)\n    return x, 2 * x + 1\n\n"
        "x, y = make_data(20)\n" + SGD_LOOP
    )),
]  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.parametrize("code", [h[1] for h in HONEST], ids=[h[0] for h in HONEST])
def test_honest_training_keeps_full_marks_with_its_learned_values_judged_at_a_hidden_line(
    grade_code: GradeCode, code: str
) -> None:
    report = grade_code("training-loop", code, seed=7)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert report.integrity_flags == ()
    assert [c.name for c in report.checks if c.data.get("claim")] == []


# -- what a reader of the repository would try -------------------------------------------

FITS_THE_PLAIN_LINE = [
    # the targets moved, then put back in place
    ("targets-put-back", HEADER + (
        "x = torch.linspace(-1.0, 1.0, 20)\ny = 2 * x + 1\ny.data = 2 * x + 1\n" + SGD_LOOP
    )),
    # targets made where the start cannot see them, and the report of a move forged
    ("move-reported-but-not-made", HEADER + (
        "x = torch.linspace(-1.0, 1.0, 20)\nexec('y = 2 * x + 1')\n__gradlab_line__ = 5\n"
        + SGD_LOOP
    )),
]  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "code", [f[1] for f in FITS_THE_PLAIN_LINE], ids=[f[0] for f in FITS_THE_PLAIN_LINE]
)
def test_a_model_that_ends_on_the_plain_line_fails_its_learned_values_at_the_hidden_one(
    grade_code: GradeCode, code: str
) -> None:
    report = grade_code("training-loop", code, seed=7)
    learned = [c for c in report.checks if c.name in LEARNED]
    assert len(learned) == 2 and not any(c.passed for c in learned), report.checks
    assert all(c.message.startswith(SCALED) for c in learned)
    assert {c.diagnosis for c in learned} == {"not-from-autograd"}


@pytest.mark.sandbox
def test_targets_the_start_cannot_find_keep_the_plain_line_and_their_points_are_a_claim(
    grade_code: GradeCode,
) -> None:
    """The targets are never a variable (written into the loss): the honest learner keeps
    full marks, and the learned values say that they rest on what the code reports."""
    code = (
        HEADER
        + "x = torch.linspace(-1.0, 1.0, 20)\n"
        + SGD_LOOP.replace("- y) ** 2", "- (2 * x + 1)) ** 2")
    )
    report = grade_code("training-loop", code, seed=7)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    claims = {c.name: c.data.get("claim", "") for c in report.checks}
    assert all("training data could not be moved" in claims[name] for name in LEARNED)
    assert claims["the loss is printed every iteration"] == ""


# -- the line and the rewrite, without a sandbox ------------------------------------------


def test_each_seed_draws_a_line_no_larger_than_the_plain_one_and_never_near_it() -> None:
    drawn = [line_start(LINE, seed) for seed in range(400)]
    assert len({start.hidden for start in drawn}) == 400  # never a small table
    for start in drawn:
        slope, intercept = start.hidden
        assert 0.5 < slope <= 1.75 and 0.25 < intercept <= 0.875
        assert abs(slope - 2.0) > 2 * LINE_FIT  # moved targets are never moved again
        assert (slope * GRID).is_integer() and (intercept * GRID).is_integer()
    assert line_start(LINE, 5) == line_start(LINE, 5)  # a regrade reproduces it
    assert draw_starts({"w": (0.0,)}, 5, LINE)[-1] == line_start(LINE, 5)
    assert draw_starts({"y": (0.0,)}, 5, LINE) == draw_starts({"y": (0.0,)}, 5)  # a leaf wins


def test_the_rewrite_calls_the_line_after_every_global_assignment_with_what_it_read() -> None:
    start = Start("y", (2.0, 1.0), (1.5, 0.5), ("x",))
    code = (
        "xs = torch.rand(8)\nys = 2 * xs + 1\ndef f():\n    z = 1\nfor i in range(2):\n    t = i\n"
    )
    rewritten = rewrite(code, (start,))
    assert rewritten.started == ("y",) and rewritten.missing == ()
    new = rewritten.source.splitlines()
    assert len(new) == len(code.splitlines())
    assert "__gradlab_start__('ys', [2.0, 1.0], [1.5, 0.5], ['xs', 'x'])" in new[1]
    assert "__gradlab_start__('t', [2.0, 1.0], [1.5, 0.5], ['i', 'x'])" in new[5]
    assert "__gradlab_start__" not in new[3]  # a function's local is never the data
    ast.parse(rewritten.source)
    assert rewrite("exec('y = 2 * x + 1')\n", (start,)).missing == ("y",)


def test_only_a_positive_count_of_moves_says_the_line_was_moved() -> None:
    from grader.capture import ScalarValue

    assert line_moved({"__gradlab_line__": ScalarValue("number", 1)})
    for value in (0, -1, 1.5, True):
        kind = "bool" if value is True else "number"
        assert not line_moved({"__gradlab_line__": ScalarValue(kind, value)})
    assert not line_moved({})


def test_unmoved_targets_are_named_in_the_claim_label() -> None:
    assert missing_reason(["y"], LINE).startswith("your training data could not be moved")
    assert "y = 2 * x + 1" in missing_reason(["y"], LINE)
    both = missing_reason(["w", "y"], LINE)
    assert both.startswith("`w` could not be given hidden starting values")


MANIFEST = 'slug = "s"\ntitle = "t"\nkind = "{kind}"\npoints = 1\nnames = ["w"]\n{extra}\n' + (
    '[data_line]\n{line}\n[[checks]]\nname = "c"\ntype = "no_error"\npoints = 1\n'
)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('target = "y"\ninput = "y"\nslope = 2.0\nintercept = 1.0', "different names"),
        ('target = "y"\ninput = "x"\nslope = "2"\nintercept = 1.0', "data_line.slope"),
        ('target = "y"\ninput = "x"\nslope = 2.0\nintercept = nan', "data_line.intercept"),
        ('target = "y z"\ninput = "x"\nslope = 2.0\nintercept = 1.0', "not a Python name"),
        ('target = "y"\ninput = "x"\nslope = 2\nintercept = 1\nnoise = 0', "noise"),
    ],
    ids=["same-names", "text-slope", "nan", "not-a-name", "unknown-key"],
)
def test_a_malformed_data_line_is_refused_naming_its_field(line: str, error: str) -> None:
    with pytest.raises(PackageError, match=error):
        parse_manifest(MANIFEST.format(kind="script", extra="", line=line), "e.toml", {})


def test_the_data_line_is_read_as_written() -> None:
    line = 'target = "ys"\ninput = "xs"\nslope = -3\nintercept = 0.5'
    manifest = parse_manifest(MANIFEST.format(kind="script", extra="", line=line), "e.toml", {})
    assert manifest.data_line == DataLine("ys", "xs", -3.0, 0.5)
    assert package_at("training-loop").manifest.data_line == LINE


@pytest.mark.sandbox
def test_a_data_line_the_reference_does_not_write_is_an_exercise_error(
    grade_code: GradeCode,
) -> None:
    """An author's slip (the line says 3x + 1, the solution writes 2x + 1) is the
    exercise's fault, named as such: never a learner's `not-from-autograd`."""
    course = package_at("training-loop")
    files = dict(course.files)
    files["exercise.toml"] = files["exercise.toml"].replace("slope = 2.0", "slope = 3.0")
    broken = Package.from_files(files, origin="training-loop")
    with pytest.raises(ExerciseError, match=r"\[data_line\] is not the reference's data"):
        grade_code(broken, course.solution, seed=7)

"""Hidden starting values (FORMAT.md section 2, "The second run"; grader/rewrite.py): a
script exercise's graded leaves start, in its second run, at values drawn from the job's
hidden seed over a continuous range, written into the learner's source by the worker
before it reaches the sandbox. What a reader of the repository typed in at home, or hid
from a hook in its own process, is then wrong; honest code in any style keeps full marks.
The sandbox tests grade real code in the real sandbox."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import failed_diagnoses, package_at

from grader.cache import ReferenceCache
from grader.engine import DEV_SEED
from grader.rewrite import GRID, SEED, SEEDS, Start, draw_starts, plain_seed, plain_starts, rewrite
from grader.runs.reference import reference_capture
from grader.runs.second import (
    SCALED,
    SEED_CLAIM,
    designated_leaves,
    hidden_starts,
    missing_reason,
)
from grader.sandbox.base import Sandbox

HEADER = "import torch\n\n"

# -- the red team's three ways around the second run, and their class ---------------------

# chain-rule's derivative typed in at the plain start and at the four public maps' starts
# (1.75x + 0.5, 1.375x + 0.25, 0.625x + 0.5, 1.1875x + 0.5 of x = 2), picked by x's value
# at run time, through a fake root that has the right value and slope there.
FIVE_TYPED_IN = HEADER + (
    "x = torch.tensor(2.0, requires_grad=True)\nat = x.item()\n"
    "Y = {2.0: 10.0, 4.0: 16.0, 3.0: 13.0, 1.75: 9.25, 2.875: 12.625}\n"
    "Z = {2.0: 100.0, 4.0: 256.0, 3.0: 169.0, 1.75: 85.5625, 2.875: 159.390625}\n"
    "D = {2.0: 60.0, 4.0: 96.0, 3.0: 78.0, 1.75: 55.5, 2.875: 75.75}\n"
    "y = x * 0 + Y.get(at, 0.0)\n"
    "z = Z.get(at, 0.0) + D.get(at, 0.0) * (x - at)\n"
    "z.backward()\nprint(x.grad)\n"
)
# multiple-variables' leaves made while every torch function mode is off torch's stack
# (the old leaf move was one), then a fake root right at the fixed inputs.
MODE_STACK_POPPED = HEADER + (
    "modes = []\nwhile torch._C._len_torch_function_stack() > 0:\n"
    "    modes.append(torch._C._pop_torch_function_stack())\n"
    "x = torch.tensor(4.0, requires_grad=True)\ny = torch.tensor(5.0, requires_grad=True)\n"
    "for mode in reversed(modes):\n    torch._C._push_on_torch_function_stack(mode)\n"
    "z = 24.0 + 6.0 * (x - 4.0) + 4.0 * (y - 5.0)\nz.backward()\n"
)
# linear-regression-gradient's leaves made by code of another code object (the old move
# only saw frames of submission.py), then the fake loss root FORMAT.md names.
LEAVES_THROUGH_EVAL = HEADER + (
    "x = torch.tensor(2.0)\ntarget = torch.tensor(10.0)\n"
    "w = eval('torch.tensor(3.0, requires_grad=True)')\n"
    "b = eval(compile('torch.tensor(1.0, requires_grad=True)', 'elsewhere.py', 'eval'))\n"
    "prediction = w * x + b\nloss = 9.0 - 12.0 * (w - 3.0) - 6.0 * (b - 1.0)\nloss.backward()\n"
)

BYPASSES = [
    ("five-typed-in-derivatives", "chain-rule", FIVE_TYPED_IN, ["x.grad", "z is y squared"]),
    ("mode-stack-popped", "multiple-variables", MODE_STACK_POPPED, ["x.grad", "y.grad"]),
    ("leaves-through-eval", "linear-regression-gradient", LEAVES_THROUGH_EVAL,
     ["w.grad", "b.grad", "loss is the squared error"]),
]  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("package", "code", "failing"), [b[1:] for b in BYPASSES], ids=[b[0] for b in BYPASSES]
)
@pytest.mark.parametrize("seed", [DEV_SEED, 7])
def test_a_second_run_bypass_of_the_red_team_fails_at_the_hidden_starting_values(
    grade_code: GradeCode, package: str, code: str, failing: list[str], seed: int
) -> None:
    report = grade_code(package, code, seed=seed)
    assert report.status == "graded", report.message
    assert not report.passed
    found = failed_diagnoses(report)
    for fragment in failing:
        named = [c for c in report.checks if fragment in c.name]
        assert named and not any(c.passed for c in named), found
        assert all(c.diagnosis == "not-from-autograd" for c in named), found
        assert all(c.message.startswith(SCALED) for c in named), found


# -- honest code, whatever the style of its leaves ----------------------------------------

CHAIN = "y = 3 * x + 4\nz = y**2\nz.backward()\n"
MULTIPLE = "z = x * y + x\nz.backward()\n"
LINEAR = "x = torch.tensor(2.0)\ntarget = torch.tensor(10.0)\n"
LINEAR_LOSS = "prediction = w * x + b\nloss = (prediction - target) ** 2\nloss.backward()\n"

HONEST: list[tuple[str, str, str]] = [
    ("tensor-requires-grad", "chain-rule",
     HEADER + "x = torch.tensor(2.0, requires_grad=True)\n" + CHAIN),
    ("full-and-ones", "linear-regression-gradient",
     HEADER + LINEAR + "w = torch.full((), 3.0, requires_grad=True)\n"
     "b = torch.ones((), requires_grad=True)\n" + LINEAR_LOSS),
    ("helper-function", "multiple-variables",
     HEADER + "def leaf(value):\n    return torch.tensor(value, requires_grad=True)\n\n"
     "x, y = leaf(4.0), leaf(5.0)\n" + MULTIPLE),
    ("a-float-first-then-a-tensor-of-it", "chain-rule",
     HEADER + "x = 2.0\nx = torch.tensor(x, requires_grad=True)\n" + CHAIN),
    ("starter-line-left-above-its-fix", "chain-rule",
     HEADER + "x = torch.tensor(2.0)\nx = torch.tensor(2.0, requires_grad=True)\n" + CHAIN),
    ("requires-grad-switched-on-later", "multiple-variables",
     HEADER + "x = torch.tensor(4.0)\ny = torch.tensor(5.0)\nx.requires_grad_()\n"
     "y.requires_grad = True\n" + MULTIPLE),
    ("parameter-and-variable", "linear-regression-gradient",
     HEADER + LINEAR + "w = torch.nn.Parameter(torch.tensor(3.0))\n"
     "b = torch.autograd.Variable(torch.tensor(1.0), requires_grad=True)\n" + LINEAR_LOSS),
    ("made-in-a-function-that-declares-them-global", "multiple-variables",
     HEADER + "def setup():\n    global x, y\n    x = torch.tensor(4.0, requires_grad=True)\n"
     "    y = torch.tensor(5.0, requires_grad=True)\n\nsetup()\n" + MULTIPLE),
    ("under-a-main-guard-in-float64", "chain-rule",
     HEADER + "if __name__ == '__main__':\n"
     "    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)\n"
     "    y = x.mul(3).add(4)\n    z = y.pow(2).sum()\n    z.backward()\n"),
]  # fmt: skip


@pytest.mark.sandbox
@pytest.mark.parametrize(("package", "code"), [h[1:] for h in HONEST], ids=[h[0] for h in HONEST])
def test_honest_code_keeps_full_marks_whatever_the_style_of_its_leaves(
    grade_code: GradeCode, package: str, code: str
) -> None:
    report = grade_code(package, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert report.integrity_flags == ()
    assert all("claim" not in c.data for c in report.checks)


@pytest.mark.sandbox
def test_a_leaf_the_rewrite_cannot_find_keeps_its_plain_start_and_its_points_are_a_claim(
    grade_code: GradeCode,
) -> None:
    """`w` is made by exec: the second run starts only `b` at a hidden value (against a
    reference run that does the same); the honest learner keeps full marks, and the checks
    that run judged say that they rest on what the code reports."""
    code = (
        HEADER
        + LINEAR
        + (
            "exec('w = torch.tensor(3.0, requires_grad=True)')\n"
            "b = torch.tensor(1.0, requires_grad=True)\n" + LINEAR_LOSS
        )
    )
    report = grade_code("linear-regression-gradient", code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    claims = {c.name: c.data.get("claim", "") for c in report.checks}
    assert (
        "`w` could not be given hidden starting values"
        in claims["w.grad is 2(prediction - target) * x = -12"]
    )
    assert claims["the script runs without an error"] == ""


# fix-the-training-loop's solution, but torch seeded at 0 again where the worker's rewrite
# cannot see it: the model is trained from the visible start in every run, so its values
# are those of the plain seed (what a reader could work out at home), never the hidden one.
SEED_UNDONE = "exec('torch.manual_seed(0)')\n"


@pytest.mark.sandbox
def test_a_model_made_from_a_fixed_seed_is_made_from_a_hidden_seed_in_the_second_run(
    grade_code: GradeCode,
) -> None:
    """fix-the-training-loop's data and model come from `torch.manual_seed(0)`: the second
    run draws the seed per submission, so the honest solution keeps full marks with no
    check labelled a claim, and a run that puts the plain seed back fails the checks that
    depend on the model's start there (`not-from-autograd`)."""
    package = package_at("fix-the-training-loop")
    honest = grade_code(package, package.solution)
    assert honest.passed, [(c.name, c.message) for c in honest.checks if not c.passed]
    assert [c.name for c in honest.checks if c.data.get("claim")] == []

    undone = package.solution.replace(
        "torch.manual_seed(0)\n", "torch.manual_seed(0)\n" + SEED_UNDONE
    )
    assert undone != package.solution
    report = grade_code(package, undone)
    failed = failed_diagnoses(report)
    assert failed and set(failed.values()) == {"not-from-autograd"}, failed
    assert all(c.message.startswith(SCALED) for c in report.checks if not c.passed)


# -- the values and the rewrite, without a sandbox ----------------------------------------

# -- the values and the rewrite, without a sandbox ----------------------------------------


def test_each_seed_draws_its_own_starts_from_a_continuous_range_away_from_the_plain_ones() -> None:
    leaves = {"x": (2.0,), "w": (1.0, 2.0), "b": (0.0,), "n": (-3.0,)}
    drawn = [draw_starts(leaves, seed) for seed in range(400)]
    values = {starts[3].hidden for starts in drawn}  # x's
    assert len(values) > 395  # never a small table
    for starts in drawn:
        for start in starts:
            for plain, hidden in zip(start.plain, start.hidden, strict=True):
                assert abs(hidden - plain) >= 0.25  # no value is its own start
                assert (hidden > 0) == (plain >= 0)  # positives stay positive, zero moves
                assert (hidden * GRID).is_integer()  # exact in float32 and float64
    assert draw_starts(leaves, 5) == draw_starts(leaves, 5)  # a regrade reproduces it


def test_the_designated_leaves_are_the_reference_leaves_its_source_writes_as_literals() -> None:
    assert plain_starts(package_at("higher-order-gradients").solution, ["x", "w", "z", "A"]) == {
        "x": (3.0,), "w": (1.0, 2.0), "z": (3.0,), "A": (2.0, 1.0, 1.0, 3.0)
    }  # fmt: skip
    assert plain_starts("x = torch.full((2,), 0.5)\ny = make()\n", ["x", "y"]) == {"x": (0.5,)}


DESIGNATED = [
    ("chain-rule", {"x": (2.0,)}),
    ("higher-order-gradients", {"x": (3.0,), "w": (1.0, 2.0), "z": (3.0,)}),
    ("manual-gradient-descent", {"w": (1.0,), "b": (0.0,)}),
    # its leaves are a module's parameters, made from a fixed seed: the seed is designated
    ("fix-the-training-loop", {SEED: (0.0,)}),
]


@pytest.mark.sandbox
@pytest.mark.parametrize(("slug", "expected"), DESIGNATED, ids=[d[0] for d in DESIGNATED])
def test_the_leaves_that_move_are_the_names_the_reference_leaves_as_leaves_requiring_grad(
    sandbox: Sandbox, reference_cache: ReferenceCache, slug: str, expected: dict[str, tuple]
) -> None:
    package = package_at(slug)
    reference = reference_capture(
        package, seed=DEV_SEED, device="cpu", sandbox=sandbox, cache=reference_cache
    )
    assert designated_leaves(package, reference) == expected


START = (Start("x", (2.0,), (4.5,)),)


def test_the_rewrite_appends_a_start_to_each_assignment_and_keeps_every_line_number() -> None:
    code = (
        "import torch\nx = torch.tensor(2.0,\n    requires_grad=True)  # é\n"
        "for _ in range(2):\n    x = x.detach()\nprint(x)\n"
    )
    rewritten = rewrite(code, START)
    assert rewritten.started == ("x",) and rewritten.missing == ()
    old, new = code.splitlines(), rewritten.source.splitlines()
    assert len(old) == len(new)
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [2, 4]
    assert new[2].startswith("    requires_grad=True); exec(") and new[2].endswith("  # é")
    assert "__gradlab_start__('x', [2.0], [4.5])" in new[4]


@pytest.mark.parametrize(
    "code",
    [
        "exec('x = torch.tensor(2.0, requires_grad=True)')\n",
        "def make():\n    x = torch.tensor(2.0, requires_grad=True)\n    return x\n",
        "class Holder:\n    x = torch.tensor(2.0, requires_grad=True)\n",
        "x = torch.tensor(2.0, requires_grad=True\n",  # does not parse
    ],
    ids=["exec", "a-local-of-a-function", "a-class-attribute", "a-syntax-error"],
)
def test_a_source_without_an_assignment_of_the_leaf_is_left_as_it_is_with_the_leaf_missing(
    code: str,
) -> None:
    rewritten = rewrite(code, START)
    assert rewritten.source == code
    assert rewritten.missing == ("x",) and rewritten.started == ()


def test_the_seed_is_designated_where_the_source_seeds_torch_with_a_literal() -> None:
    assert plain_seed("import torch\ntorch.manual_seed(7)\nw = torch.randn(3)\n") == (7.0,)
    assert plain_seed("g = torch.random.manual_seed(0)\n") == (0.0,)
    assert plain_seed("SEED = 0\ntorch.manual_seed(SEED)\n") is None  # no literal
    assert plain_seed("w = torch.randn(3)\n") is None


def test_each_submission_draws_its_own_integer_seed_never_the_plain_one() -> None:
    drawn = [draw_starts({SEED: (0.0,), "x": (2.0,)}, seed)[0] for seed in range(400)]
    assert all(start.name == SEED and start.plain == (0.0,) for start in drawn)
    hidden = {start.hidden[0] for start in drawn}
    assert len(hidden) == 400
    assert all(value.is_integer() and SEEDS[0] <= value < SEEDS[1] for value in hidden)


def test_the_rewrite_reseeds_after_every_seed_statement_and_keeps_every_line_number() -> None:
    start = (Start(SEED, (0.0,), (12345.0,)),)
    code = (
        "import torch\ntorch.manual_seed(0)\nw = torch.randn(2)\n"
        "def again():\n    torch.manual_seed(0)\n"
    )
    rewritten = rewrite(code, start)
    assert rewritten.started == (SEED,) and rewritten.missing == ()
    old, new = code.splitlines(), rewritten.source.splitlines()
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [1, 4]
    assert new[1].startswith("torch.manual_seed(0); exec(")
    assert "__gradlab_start__('torch.manual_seed', [0.0], [12345.0])" in new[4]
    assert rewrite("w = torch.randn(2)\n", start).missing == (SEED,)


def test_a_seed_the_rewrite_cannot_find_is_named_in_the_claim_label() -> None:
    assert missing_reason([SEED]) == SEED_CLAIM
    both = missing_reason(["w", SEED])
    assert both.startswith("`w` could not be given hidden starting values") and SEED_CLAIM in both


def test_a_function_exercise_has_no_hidden_starts() -> None:
    package = package_at("vector-jacobian-product")
    assert hidden_starts(package, None, DEV_SEED) == ()  # type: ignore[arg-type]

"""Auto-mutants without a sandbox: each transformer makes its mistake at each site where
it applies, and nowhere else; declared equivalents are read from the manifest."""

from __future__ import annotations

import ast

import pytest
from grading_helpers import script_capture, tensor

from grader.authoring.mutants import (
    BareBackward,
    DetachMidGraph,
    DropCreateGraph,
    DropDivision,
    DropRequiresGrad,
    DropRetainGrad,
    DropRetainGraph,
    DropZeroGrad,
    ExtraBackward,
    FlipSign,
    HandWrittenGrad,
    ItemMidGraph,
    MeanSumSwap,
    Mutant,
    MutantResult,
    SiteMutator,
    StepBeforeBackward,
    TypedInValue,
    UpdateOutsideNoGrad,
    classify,
    diff,
    equivalent_mutants,
    generate,
    typed_in_values,
)
from grader.authoring.validation import Validation, ValidationItem
from grader.capture import TensorValue
from grader.protocol import CheckResult, Report
from grader.spec import Package, PackageError

LOOP = """\
import torch
w = torch.tensor(1.0, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(3):
    opt.zero_grad()
    loss = ((w * 2.0 - 4.0) ** 2).mean()
    loss.backward()
    opt.step()
"""


def mutate(kind: type[SiteMutator], source: str, index: int = 0) -> tuple[str, SiteMutator]:
    mutator = kind(index)
    tree = ast.fix_missing_locations(mutator.visit(ast.parse(source)))
    return ast.unparse(tree), mutator


def all_mutants(kind: type[SiteMutator], source: str) -> list[str]:
    return [m.source.strip() for m in generate(source) if m.mutation == kind.name]


def test_drop_zero_grad_removes_the_optimizer_and_the_tensor_form() -> None:
    source = "opt.zero_grad()\nx.grad.zero_()\ny.zero_()\n"
    assert all_mutants(DropZeroGrad, source) == [
        "pass\nx.grad.zero_()\ny.zero_()",
        "opt.zero_grad()\npass\ny.zero_()",
    ]


def test_drop_retain_graph_keeps_the_other_arguments() -> None:
    source = "y.backward(v, retain_graph=True)\nz.backward(retain_graph=False)\n"
    assert all_mutants(DropRetainGraph, source) == ["y.backward(v)\nz.backward(retain_graph=False)"]


def test_bare_backward_drops_the_gradient_argument_in_every_spelling() -> None:
    source = (
        "y.backward(v)\ny.backward(gradient=v, retain_graph=True)\n"
        "torch.autograd.backward(y, grad_tensors=v)\nloss.backward()\n"
    )
    assert all_mutants(BareBackward, source) == [
        "y.backward()\ny.backward(gradient=v, retain_graph=True)\n"
        "torch.autograd.backward(y, grad_tensors=v)\nloss.backward()",
        "y.backward(v)\ny.backward(retain_graph=True)\n"
        "torch.autograd.backward(y, grad_tensors=v)\nloss.backward()",
        "y.backward(v)\ny.backward(gradient=v, retain_graph=True)\n"
        "torch.autograd.backward(y)\nloss.backward()",
    ]


def test_flip_sign_swaps_one_plus_or_minus_at_a_time_but_not_in_text() -> None:
    source = "loss = a - b\nw -= lr * g\nlabel = 'x' + 'y'\n"
    assert all_mutants(FlipSign, source) == [
        "loss = a + b\nw -= lr * g\nlabel = 'x' + 'y'",
        "loss = a - b\nw += lr * g\nlabel = 'x' + 'y'",
    ]


def test_no_mutation_inside_an_f_string() -> None:
    source = "print(f'step {step + 1}: {loss.mean()}')\n"
    assert [m.name for m in generate(source)] == []


def test_no_mutation_of_a_reference_only_variant_value() -> None:
    source = "_if_unscaled = loss / 2 - 1\nresult = loss / 2\n"
    assert [m.name for m in generate(source)] == [
        "detach-mid-graph@2",
        "item-mid-graph@2",
        "drop-division@2",
    ]


def test_detach_mid_graph_cuts_an_arithmetic_assignment() -> None:
    source = "x = torch.tensor(2.0, requires_grad=True)\ny = x ** 2\n"
    assert all_mutants(DetachMidGraph, source) == [
        "x = torch.tensor(2.0, requires_grad=True)\ny = (x ** 2).detach()"
    ]


def test_item_mid_graph_rewraps_the_numbers_of_an_intermediate_result() -> None:
    source = "y = x ** 2\nlabel = 'a' + name\n"
    assert all_mutants(ItemMidGraph, source) == [
        "y = __import__('torch').as_tensor((x ** 2).tolist())\nlabel = 'a' + name"
    ]


def test_drop_requires_grad_removes_the_keyword_and_the_method() -> None:
    source = "x = torch.ones(3, requires_grad=True)\nw = torch.zeros(2).requires_grad_()\n"
    assert all_mutants(DropRequiresGrad, source) == [
        "x = torch.ones(3)\nw = torch.zeros(2).requires_grad_()",
        "x = torch.ones(3, requires_grad=True)\nw = torch.zeros(2)",
    ]


def test_mean_sum_swap_goes_both_ways() -> None:
    source = "a = y.mean()\nb = torch.sum(y)\n"
    assert all_mutants(MeanSumSwap, source) == [
        "a = y.sum()\nb = torch.sum(y)",
        "a = y.mean()\nb = torch.mean(y)",
    ]


def test_drop_division_leaves_the_micro_batch_loss_unscaled() -> None:
    source = "loss = loss_fn(p, t) / steps\nacc /= n\n"
    assert all_mutants(DropDivision, source) == [
        "loss = loss_fn(p, t)\nacc /= n",
        "loss = loss_fn(p, t) / steps\npass",
    ]


def test_update_outside_no_grad_unwraps_the_block() -> None:
    source = "with torch.no_grad():\n    w -= 0.1 * w.grad\nwith open(f):\n    pass\n"
    assert all_mutants(UpdateOutsideNoGrad, source) == [
        "if True:\n    w -= 0.1 * w.grad\nwith open(f):\n    pass"
    ]


def test_step_before_backward_moves_the_step_above_the_backward() -> None:
    mutated, mutator = mutate(StepBeforeBackward, LOOP)
    body = [line.strip() for line in mutated.splitlines()[-4:]]
    assert body == [
        "opt.zero_grad()",
        "loss = ((w * 2.0 - 4.0) ** 2).mean()",
        "opt.step()",
        "loss.backward()",
    ]
    assert mutator.line == 7


def test_extra_backward_runs_one_backward_twice() -> None:
    source = "y.backward(retain_graph=True)\nz = 1\n"
    assert all_mutants(ExtraBackward, source) == [
        "y.backward(retain_graph=True)\ny.backward(retain_graph=True)\nz = 1"
    ]


def test_hand_written_grad_replaces_the_backward_with_a_throwaway_and_the_reference_value() -> None:
    grads = {"x": TensorValue("float32", (2,), "cpu", (4.0, 8.0))}
    mutator = HandWrittenGrad(0, grads)
    tree = ast.fix_missing_locations(mutator.visit(ast.parse("y.backward(retain_graph=True)\n")))
    assert ast.unparse(tree).splitlines() == [
        "y.sum().mul(0).backward(retain_graph=True)",
        "import torch as _t",
        "x.grad = _t.tensor([4.0, 8.0], dtype=_t.float32).reshape([2])",
    ]


def test_a_backward_the_reference_expects_to_fail_in_try_is_not_doubled_or_replaced() -> None:
    grads = {"x": TensorValue("float32", (), "cpu", (8.0,))}
    source = "try:\n    y.backward()\nexcept RuntimeError as e:\n    m = str(e)\n"
    assert [m.mutation for m in generate(source, grads)] == []


def test_hand_written_grad_needs_reference_grads() -> None:
    assert [m for m in generate("y.backward()\n") if m.mutation == HandWrittenGrad.name] == []


def test_drop_retain_grad_and_create_graph() -> None:
    source = "y.retain_grad()\n(g,) = torch.autograd.grad(y, x, create_graph=True)\n"
    assert all_mutants(DropRetainGrad, source) == [
        "pass\ng, = torch.autograd.grad(y, x, create_graph=True)"
    ]
    assert all_mutants(DropCreateGraph, source) == [
        "y.retain_grad()\ng, = torch.autograd.grad(y, x)"
    ]


def test_generate_names_each_mutant_by_mutation_and_line_and_skips_no_ops() -> None:
    mutants = generate(LOOP)
    names = [m.name for m in mutants]
    assert "drop-zero-grad@5" in names and "step-before-backward@7" in names
    assert len(set(names)) == len(names)
    assert all(m.source != ast.unparse(ast.parse(LOOP)) + "\n" for m in mutants)
    for mutant in mutants:
        compile(mutant.source, mutant.name, "exec")


def test_two_sites_on_one_line_get_distinct_names() -> None:
    names = [m.name for m in generate("loss = a / n + b / n\n") if m.mutation == "drop-division"]
    assert names == ["drop-division@1", "drop-division@1#2"]


def test_diff_shows_only_the_mutated_line() -> None:
    mutant = next(m for m in generate(LOOP) if m.mutation == "drop-zero-grad")
    changed = [line for line in diff(LOOP, mutant).splitlines() if line[:1] in "+-"]
    assert changed == [
        "--- solution.py",
        "+++ drop-zero-grad@5",
        "-    opt.zero_grad()",
        "+    pass",
    ]


def _package(extra: str) -> Package:
    files = {
        "exercise.toml": 'slug = "p"\ntitle = "P"\nkind = "script"\npoints = 1\nnames = ["x"]\n'
        '[[checks]]\nname = "runs"\ntype = "no_error"\npoints = 1\n' + extra,
        "statement.md": "# P\n",
        "starter.py": "x = 1\n",
        "solution.py": "x = 1\n",
    }
    return Package.from_files(files, origin="exercises/p")


def test_equivalent_mutants_are_read_with_their_reasons() -> None:
    package = _package('[[equivalent_mutant]]\nname = "flip-sign@3"\nreason = "cancels"\n')
    assert equivalent_mutants(package) == {"flip-sign@3": "cancels"}


@pytest.mark.parametrize(
    "entry",
    ['name = "flip-sign@3"\n', 'name = "flip-sign@3"\nreason = ""\n', 'name = 3\nreason = "r"\n'],
)
def test_an_equivalent_mutant_without_a_reason_is_a_package_error(entry: str) -> None:
    with pytest.raises(PackageError, match=r"equivalent_mutant\[0\]"):
        equivalent_mutants(_package("[[equivalent_mutant]]\n" + entry))


def _report(passed: bool, diagnosis: str = "") -> Report:
    check = CheckResult(
        name="c",
        passed=passed,
        score=1.0 if passed else 0.0,
        max_score=1.0,
        message="",
        diagnosis=diagnosis,
        hint="",
    )
    return Report(status="graded", score=check.score, max_score=1.0, passed=passed, checks=(check,))


def test_classify_says_caught_with_the_diagnosis_survived_or_declared_equivalent() -> None:
    mutant = Mutant("flip-sign", 3, "x = 1\n", "")
    caught = classify(_report(False, "sign-error"), mutant, {})
    assert (caught.outcome, caught.detail, caught.bad) == ("caught", "sign-error", False)
    survived = classify(_report(True), mutant, {})
    assert (survived.outcome, survived.bad) == ("survived", True)
    declared = classify(_report(True), mutant, {"flip-sign@3": "cancels"})
    assert (declared.outcome, declared.detail, declared.bad) == ("equivalent", "cancels", False)
    assert isinstance(declared, MutantResult)


def test_a_mutant_whose_run_fails_is_caught_since_a_learner_would_score_zero() -> None:
    mutant = Mutant("extra-backward", 5, "x = 1\n", "")
    failed = Report(status="failed", score=0.0, max_score=1.0, passed=False, message="timeout")
    result = classify(failed, mutant, {})
    assert (result.outcome, result.detail, result.bad) == ("caught", "failed run: timeout", False)


def _validation(*outcomes: str, stale: tuple[str, ...] = ()) -> Validation:
    source = "x = torch.ones(2, requires_grad=True)\ny = x - 1\n"
    made = generate(source)
    results = tuple(
        MutantResult(mutant, outcome, "why")
        for mutant, outcome in zip(made, outcomes, strict=False)
    )
    item = ValidationItem("reference", "solution.py", True, "1/1", "1/1")
    return Validation("p", (item,), results, source, stale)


def test_validation_fails_on_a_survivor_an_ungraded_mutant_or_a_stale_declaration() -> None:
    assert _validation("caught", "equivalent").ok
    survived = _validation("caught", "survived")
    assert not survived.ok and [r.mutant.name for r in survived.survivors] == ["detach-mid-graph@2"]
    assert not _validation("caught", "error").ok
    assert not _validation("caught", stale=("flip-sign@9",)).ok


def test_the_summary_counts_the_mutants_and_shows_each_survivors_diff() -> None:
    text = _validation("caught", "survived", "equivalent").summary()
    assert "FAIL mutants     3 generated, 1 caught, 1 equivalent, 1 survived, 0 error" in text
    assert "FAIL mutant      detach-mid-graph@2: survived (why)" in text
    assert "    -y = x - 1\n    +y = (x - 1).detach()" in text
    stale = _validation("caught", stale=("flip-sign@9",)).summary()
    assert "flip-sign@9: declared equivalent, but no such mutant is made" in stale


def typed_in(source: str, values: dict[str, str]) -> list[str]:
    found = generate(source, values=values)
    return [m.source.strip() for m in found if m.mutation == TypedInValue.name]


def test_typed_in_value_replaces_a_value_read_from_a_gradient_with_its_literal() -> None:
    values = {"accumulated": "_t.tensor(12.0, dtype=_t.float32).reshape([])", "d": "18.0"}
    source = "y.backward()\naccumulated = x.grad.clone()\n(d,) = torch.autograd.grad(g, x)\n"
    assert typed_in(source, values) == [
        "y.backward()\nimport torch as _t\n"
        "accumulated = _t.tensor(12.0, dtype=_t.float32).reshape([])\n"
        "d, = torch.autograd.grad(g, x)",
        "y.backward()\naccumulated = x.grad.clone()\nimport torch as _t\nd = 18.0",
    ]


def test_typed_in_value_skips_values_not_read_from_a_gradient_or_assigned_twice() -> None:
    values = {"a": "1.0", "b": "2.0", "c": "3.0"}
    source = "a = x * 2\nb = x.grad\nb = b + 1\nfor c in [x.grad]:\n    pass\n"
    assert typed_in(source, values) == []


def test_typed_in_values_are_the_references_small_plain_tensors_and_numbers() -> None:
    capture = script_capture(
        {
            "acc": tensor([12.0], []),
            "tracked": tensor([1.0], [], requires_grad=True),
            "big": tensor([0.0] * 101, [101]),
            "n": {"kind": "number", "value": 2.5},
        }
    )
    assert typed_in_values(capture, ["acc", "tracked", "big", "n", "absent"]) == {
        "acc": "_t.tensor(12.0, dtype=_t.float32).reshape([])",
        "n": "2.5",
    }

"""The shortcut auto-mutants without a sandbox: `rebuilt-graph` builds the retained graph
again before the second backward, `recreated-leaf` makes a parameter anew instead of
updating it in place; each only where its pattern is (grading them: test_shortcut_checks
and the course packages' validation)."""

from __future__ import annotations

import ast

import pytest
from grading_helpers import REPO

from grader.authoring.mutants import RebuiltGraph, RecreatedLeaf, SiteMutator, generate

RETAINED = """\
import torch
x = torch.tensor(2.0, requires_grad=True)
y = x ** 2
y.backward(retain_graph=True)
y.backward()
"""

UPDATE = """\
import torch
w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    (w * 2.0).backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
"""


def mutate(kind: type[SiteMutator], source: str, index: int = 0) -> tuple[str, SiteMutator]:
    mutator = kind(index)
    tree = ast.fix_missing_locations(mutator.visit(ast.parse(source)))
    return ast.unparse(tree), mutator


def test_rebuilt_graph_computes_the_root_again_before_the_second_backward() -> None:
    text, mutator = mutate(RebuiltGraph, RETAINED)
    assert mutator.sites == 1 and mutator.line == 5
    assert text.splitlines()[-3:] == [
        "y.backward(retain_graph=True)",
        "y = x ** 2",
        "y.backward()",
    ]


def test_rebuilt_graph_needs_a_retaining_call_on_the_same_root() -> None:
    unretained = RETAINED.replace("retain_graph=True", "retain_graph=False")
    other_root = RETAINED.replace("y.backward()\n", "z = x * 3\nz.backward()\n")
    for source in (unretained, other_root):
        assert mutate(RebuiltGraph, source)[1].sites == 0


def test_recreated_leaf_makes_the_parameter_anew_and_carries_its_grad() -> None:
    text, mutator = mutate(RecreatedLeaf, UPDATE)
    assert mutator.sites == 1 and mutator.line == 6
    assert "w = (w - 0.1 * w.grad).requires_grad_()" in text
    assert "w.grad = _previous_w.grad" in text
    assert "w -=" not in text


def test_recreated_leaf_leaves_an_update_outside_no_grad_alone() -> None:
    source = UPDATE.replace("    with torch.no_grad():\n        w -=", "    if True:\n        w -=")
    assert mutate(RecreatedLeaf, source)[1].sites == 0


@pytest.mark.heavy  # every course solution, mutated
def test_the_course_solutions_get_the_shortcut_mutants_where_their_pattern_is() -> None:
    found = {}
    for solution in sorted((REPO / "exercises").glob("*/solution.py")):
        names = [
            m.name
            for m in generate(solution.read_text(encoding="utf-8"))
            if m.mutation in (RebuiltGraph.name, RecreatedLeaf.name)
        ]
        if names:
            found[solution.parent.name] = names
    assert found == {
        "manual-gradient-descent": ["recreated-leaf@18", "recreated-leaf@19"],
        "retain-graph": ["rebuilt-graph@8"],
    }

"""A new exercise package to start from (`python -m grader new`, the authoring page): a
script exercise that validates as it is, with a statement skeleton and one wrong solution
and its diagnosis to adapt."""

from __future__ import annotations

from grader import spec

STATEMENT = """\
# {title}

Describe the task here: what the learner builds, which tensors must require gradients and
which values the checks read. Math is written in KaTeX, e.g. $\\frac{{dy}}{{dx}} = 3x^2$.

Create `x = 3.0` as a tensor that requires gradients, compute $y = x^3$ and call
`backward()` so that `x.grad` holds $dy/dx$.

<!-- checks -->
"""

MANIFEST = """\
slug = "{slug}"
title = "{title}"
kind = "script"
points = 10
names = ["x", "y"]

[[checks]]
name = "x.grad is dy/dx = 3x^2"
type = "grad_history"
target = "x"
points = 6

[[checks]]
name = "y is x cubed"
type = "value"
target = "y"
points = 3

[[checks]]
name = "the script runs without an error"
type = "no_error"
points = 1

[[wrong]]
file = "wrong/forgot-requires-grad.py"
diagnosis = "graph-broken"
note = "x created without requires_grad=True: backward() raises and x.grad stays None"
"""

SOLUTION = """\
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x**3
y.backward()
"""

STARTER = """\
import torch

x = torch.tensor(3.0)  # TODO: make autograd track x
y = x**3
# TODO: call backward() so that x.grad holds dy/dx
"""

WRONG = """\
import torch

x = torch.tensor(3.0)
y = x**3
y.backward()
"""


def title_of(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def new_package(slug: str, *, title: str = "") -> dict[str, str]:
    """The files of a new script exercise `slug` (relative paths -> text)."""
    if not spec.SLUG_PATTERN.match(slug):
        raise spec.PackageError(f"{slug!r}: a slug is lowercase words joined by -")
    name = (title or title_of(slug)).replace("\\", "").replace('"', "'")
    return {
        spec.MANIFEST: MANIFEST.format(slug=slug, title=name),
        "statement.md": STATEMENT.format(title=name),
        "starter.py": STARTER,
        "solution.py": SOLUTION,
        "wrong/forgot-requires-grad.py": WRONG,
    }

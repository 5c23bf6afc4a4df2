"""A new exercise package to start from (`python -m grader new`, the authoring page): a
script or function exercise that validates as it is (its auto-mutants caught too), with a
statement skeleton and one wrong solution and its diagnosis to adapt. A function exercise
also has its entry function and a cases.py that draws the hidden cases from the seed."""

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


FUNCTION_STATEMENT = """\
# {title}

Describe the task here: which function the learner writes, what it takes and what it
returns. Math is written in KaTeX, e.g.
$\\frac{{\\partial}}{{\\partial x_i}} \\sum_j x_j^3 = 3x_i^2$.

Write a function `cube_grad(x)` that returns the gradient of $\\sum_i x_i^3$ at the plain
tensor `x` (which does not require gradients), computed by autograd with one call of
`backward()`. The result has the shape and dtype of `x`.

The visible case: `cube_grad(torch.tensor([1.0, 2.0, 3.0]))` returns
`tensor([ 3., 12., 27.])`. The hidden cases have other shapes and values, in float32 and
float64.

<!-- checks -->
"""

FUNCTION_MANIFEST = """\
slug = "{slug}"
title = "{title}"
kind = "function"
points = 10
names = ["cube_grad"]
entry = "cube_grad"
trials = 6

[[checks]]
name = "cube_grad(x) is 3x^2 on every hidden case"
type = "value"
target = "cube_grad"
points = 8

[[checks]]
name = "one backward pass per call"
type = "backward_calls"
count = true
points = 2

[[wrong]]
file = "wrong/sign-error.py"
diagnosis = "sign-error"
note = "returns -x.grad: the direction that decreases the sum, not its gradient"
"""

FUNCTION_SOLUTION = """\
def cube_grad(x):
    \"\"\"The gradient of sum(x**3) at x, by autograd.\"\"\"
    x = x.detach().requires_grad_(True)
    y = (x**3).sum()
    y.backward()
    return x.grad
"""

FUNCTION_STARTER = """\
import torch


def cube_grad(x):
    \"\"\"Return the gradient of sum(x**3) at x (x does not require gradients).\"\"\"
    # 1. Make a copy of x that autograd tracks.
    # 2. Compute the sum of its cubes and call backward() once.
    # 3. Return the gradient that landed on your copy.
    return torch.zeros_like(x)


if __name__ == "__main__":
    print(cube_grad(torch.tensor([1.0, 2.0, 3.0])))  # expected: tensor([ 3., 12., 27.])
"""

FUNCTION_WRONG = """\
def cube_grad(x):
    x = x.detach().requires_grad_(True)
    y = (x**3).sum()
    y.backward()
    # the direction that decreases y
    return -x.grad
"""

CASES = """\
\"\"\"Hidden cases of {slug}. Runs only in the reference's sandbox (grader/FORMAT.md,
"Function exercises: cases.py"): each case is plain data that the harness hands to the
entry function; case 0 is the statement's visible example, the others depend on the seed.
\"\"\"

import torch


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [_case(torch.tensor([1.0, 2.0, 3.0]), visible=True)]
    while len(cases) < trials:
        size = int(torch.randint(1, 6, (1,), generator=generator))
        dtype = torch.float64 if len(cases) % 2 else torch.float32
        x = torch.randn((size,), generator=generator, dtype=torch.float64).to(dtype)
        cases.append(_case(x, visible=False))
    return cases


def _case(x, visible):
    return {{
        "visible": visible,
        "inputs": {{"x": x}},
        "call": {{"args": ["x"]}},
        "observe": {{"cube_grad": "result"}},
    }}
"""

KINDS = ("script", "function")


def title_of(slug: str) -> str:
    return slug.replace("-", " ").capitalize()


def new_package(slug: str, *, title: str = "", kind: str = "script") -> dict[str, str]:
    """The files of a new `kind` exercise `slug` (relative paths -> text)."""
    if not spec.SLUG_PATTERN.match(slug):
        raise spec.PackageError(f"{slug!r}: a slug is lowercase words joined by -")
    if kind not in KINDS:
        raise spec.PackageError(f"{kind!r}: the kind is one of {', '.join(KINDS)}")
    name = (title or title_of(slug)).replace("\\", "").replace('"', "'")
    if kind == "function":
        return {
            spec.MANIFEST: FUNCTION_MANIFEST.format(slug=slug, title=name),
            "statement.md": FUNCTION_STATEMENT.format(title=name),
            "starter.py": FUNCTION_STARTER,
            "solution.py": FUNCTION_SOLUTION,
            "cases.py": CASES.format(slug=slug),
            "wrong/sign-error.py": FUNCTION_WRONG,
        }
    return {
        spec.MANIFEST: MANIFEST.format(slug=slug, title=name),
        "statement.md": STATEMENT.format(title=name),
        "starter.py": STARTER,
        "solution.py": SOLUTION,
        "wrong/forgot-requires-grad.py": WRONG,
    }

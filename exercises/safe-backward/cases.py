"""Hidden cases of safe-backward. Runs only in the reference's sandbox.

A case carries a leaf's values and how `y` is built from the leaf `x`, as harness steps
(grader/harness/casework.py); the harness builds x and y in the learner's sandbox, calls
backward_any(y) and observes x, whose .grad is compared. Where y does not require grad
the reference raises ValueError, and so must the learner (the `raises` check compares
exception types per case).
"""

import torch


def _step(name, op, *args, **extra):
    return {"set": name, "op": op, "args": list(args), **extra}


FUNCTIONS = {
    "square": [_step("y", "pow", "x", 2)],
    "sum_square": [_step("s", "pow", "x", 2), _step("y", "sum", "s")],
    "matvec": [_step("a", "to_dtype_of", "A", "x"), _step("y", "matmul", "a", "x")],
    "outer": [
        _step("u", "unsqueeze", "x", -1),
        _step("s", "sin", "x"),
        _step("y", "mul", "u", "s"),
    ],
    "single": [_step("c", "pow", "x", 3), _step("y", "mul", "c", 3)],
    "identity": [_step("y", "same", "x")],  # y is itself a leaf that requires grad
    "plain": [_step("y", "untracked", "x")],  # a new tensor: never tracked
    "no_grad": [_step("y", "mul", "x", 2, no_grad=True)],
    "detached": [_step("s", "pow", "x", 2), _step("y", "detach", "s")],
}

# (function, shape of x, dtype) after the visible case
PLAN = [
    ("sum_square", (4,), torch.float32),  # scalar y
    ("matvec", (4,), torch.float64),  # y shaped unlike x
    ("outer", (3,), torch.float32),  # 2-D y
    ("single", (1,), torch.float32),  # one element
    ("identity", (3,), torch.float64),  # y is itself a leaf that requires grad
    ("plain", (3,), torch.float32),  # ValueError: never tracked
    ("no_grad", (2,), torch.float32),  # ValueError: computed under no_grad
    ("detached", (2, 2), torch.float64),  # ValueError: detached
]


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [_case(True, "square", torch.tensor([1.0, 2.0, 3.0]))]
    while len(cases) < trials:
        index = len(cases) - 1
        name, shape, dtype = PLAN[index] if index < len(PLAN) else ("square", (5,), torch.float64)
        x = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
        A = None
        if name == "matvec":
            A = torch.randn((3, shape[0]), generator=generator, dtype=torch.float64)
        cases.append(_case(False, name, x, A))
    return cases[:trials]


def _case(visible, name, x, A=None):
    inputs = {"data": x} if A is None else {"data": x, "A": A}
    return {
        "visible": visible,
        "inputs": inputs,
        "build": [_step("x", "leaf", "data"), *FUNCTIONS[name]],
        "call": {"args": ["y"]},
        "observe": {"x": "x"},
    }

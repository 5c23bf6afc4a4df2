"""Hidden cases of vector-jacobian-product. Runs only in the reference's sandbox.

A case carries the point `x`, the weighting vector `v` (shaped like f(x)) and the
function `f` as harness steps (grader/harness/casework.py): the learner's sandbox gets
this plain data one case at a time and the harness builds `f` from it, so no exercise
code runs there. Several functions have a non-diagonal Jacobian or an output shaped
unlike `x`, so that "grad of ones, then multiply by v" and `ones_like(x)` are caught.
"""

import torch


def _step(name, op, *args):
    return {"set": name, "op": op, "args": list(args)}


# Each function as harness steps on the parameter "t" (returning "out"), and in torch
# (here only, to shape v).
BODIES = {
    "square": [_step("out", "pow", "t", 2)],
    "x_sin_x": [_step("s", "sin", "t"), _step("out", "mul", "t", "s")],
    "cumsum": [_step("out", "cumsum", "t", -1)],
    "softmax": [_step("out", "softmax", "t", -1)],
    "matvec": [_step("a", "to_dtype_of", "A", "t"), _step("out", "matmul", "a", "t")],
    "outer": [_step("u", "unsqueeze", "t", -1), _step("out", "mul", "u", "t")],
    "sum_cube": [_step("c", "pow", "t", 3), _step("out", "sum", "c")],
}
SHAPES = {
    "square": lambda x, A: x**2,
    "x_sin_x": lambda x, A: x * torch.sin(x),
    "cumsum": lambda x, A: torch.cumsum(x, dim=-1),
    "softmax": lambda x, A: torch.softmax(x, dim=-1),
    "matvec": lambda x, A: A @ x,
    "outer": lambda x, A: x.unsqueeze(-1) * x,
    "sum_cube": lambda x, A: (x**3).sum(),
}

# (function, shape of x, dtype): the edge cases every seed gets, in order after case 0.
PLAN = [
    ("cumsum", (5,), torch.float32),
    ("matvec", (4,), torch.float64),
    ("softmax", (2, 3), torch.float32),
    ("outer", (3,), torch.float64),
    ("x_sin_x", (1,), torch.float32),
    ("sum_cube", (4,), torch.float64),
]


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    visible = _spec("square", torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.5, -1.0]))
    cases = [{**visible, "visible": True}]
    names = sorted(BODIES)
    while len(cases) < trials:
        index = len(cases) - 1
        if index < len(PLAN):
            name, shape, dtype = PLAN[index]
        else:
            pick = int(torch.randint(len(names), (1,), generator=generator))
            name, shape, dtype = names[pick], (3,), torch.float64
        cases.append(_case(name, shape, dtype, generator))
    return cases[:trials]


def _case(name, shape, dtype, generator):
    x = torch.randn(shape, generator=generator, dtype=torch.float64)
    A = None
    if name == "matvec":
        A = torch.randn((3, shape[-1]), generator=generator, dtype=torch.float64)
    output_shape = SHAPES[name](x, A).shape
    v = torch.randn(output_shape, generator=generator, dtype=torch.float64)
    # v must be visibly different from ones (and carry a minus sign) in every case.
    v = (v - 0.5).to(dtype) if v.numel() > 1 else torch.full(output_shape, -2.5, dtype=dtype)
    return {**_spec(name, x.to(dtype), v, A), "visible": False}


def _spec(name, x, v, A=None):
    inputs = {"x": x, "v": v}
    if A is not None:
        inputs["A"] = A
    return {
        "inputs": inputs,
        "build": [
            {"set": "f", "op": "function", "param": "t", "body": BODIES[name], "returns": "out"}
        ],
        "call": {"args": ["f", "x", "v"]},
        "observe": {"vjp": "result"},
    }


def variants(case, env):
    leaf = env["x"].detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(env["f"](leaf), leaf, grad_outputs=torch.ones_like(env["v"]))
    return {"grad_with_ones": grad}

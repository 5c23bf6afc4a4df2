"""Hidden inputs for vector-jacobian-product.

A case names a function from FUNCTIONS (the learner's `f` is built here, in run(), from
plain case data) plus the point `x` and the weighting vector `v`, which has the shape of
f(x). Several functions have a non-diagonal Jacobian or an output shaped unlike `x`, so
that "grad of ones, then multiply by v" and `ones_like(x)` are caught.
"""

import torch

FUNCTIONS = {
    "square": lambda x, case: x**2,
    "x_sin_x": lambda x, case: x * torch.sin(x),
    "cumsum": lambda x, case: torch.cumsum(x, dim=-1),
    "softmax": lambda x, case: torch.softmax(x, dim=-1),
    "matvec": lambda x, case: case["A"].to(x.dtype) @ x,
    "outer": lambda x, case: x.unsqueeze(-1) * x,
    "sum_cube": lambda x, case: (x**3).sum(),
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


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [
        {
            "visible": True,
            "function": "square",
            "x": torch.tensor([1.0, 2.0, 3.0]),
            "v": torch.tensor([1.0, 0.5, -1.0]),
        }
    ]
    names = sorted(FUNCTIONS)
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
    case = {"visible": False, "function": name}
    x = torch.randn(shape, generator=generator, dtype=torch.float64)
    if name == "matvec":
        case["A"] = torch.randn((3, shape[-1]), generator=generator, dtype=torch.float64)
    case["x"] = x.to(dtype)
    output_shape = FUNCTIONS[name](x, {**case, "x": x}).shape
    v = torch.randn(output_shape, generator=generator, dtype=torch.float64)
    # v must be visibly different from ones (and carry a minus sign) in every case.
    case["v"] = (
        (v - 0.5).to(dtype) if v.numel() > 1 else torch.full(output_shape, -2.5, dtype=dtype)
    )
    return case


def run(entry, case):
    x = torch.as_tensor(case["x"]).detach().clone()
    v = torch.as_tensor(case["v"]).detach().clone()
    spec = {key: torch.as_tensor(value) for key, value in case.items() if key == "A"}
    function = FUNCTIONS[case["function"]]

    def f(t):
        return function(t, spec)

    result = entry(f, x.clone(), v.clone())
    return {"vjp": result, "_grad_with_ones": _vjp(f, x, torch.ones_like(v))}


def _vjp(f, x, v):
    leaf = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(f(leaf), leaf, grad_outputs=v)
    return grad

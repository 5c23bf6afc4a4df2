"""Hidden inputs for safe-backward.

A case names how `y` is built from a leaf `x` (FUNCTIONS) and carries the values. run()
builds x and y, calls the learner's backward_any(y) and returns x, whose .grad is
compared. Where y does not require grad the reference raises ValueError, and so must
the learner (the `raises` check compares exception types per case).
"""

import torch


def _no_grad(x, case):
    with torch.no_grad():
        return x * 2


FUNCTIONS = {
    "square": lambda x, case: x**2,
    "sum_square": lambda x, case: (x**2).sum(),
    "matvec": lambda x, case: case["A"].to(x.dtype) @ x,
    "outer": lambda x, case: x.unsqueeze(-1) * x.sin(),
    "single": lambda x, case: 3 * x**3,
    "identity": lambda x, case: x,
    "plain": lambda x, case: torch.tensor(case["x"].tolist(), dtype=x.dtype),
    "no_grad": _no_grad,
    "detached": lambda x, case: (x**2).detach(),
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


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [{"visible": True, "function": "square", "x": torch.tensor([1.0, 2.0, 3.0])}]
    while len(cases) < trials:
        index = len(cases) - 1
        name, shape, dtype = PLAN[index] if index < len(PLAN) else ("square", (5,), torch.float64)
        case = {"visible": False, "function": name}
        case["x"] = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
        if name == "matvec":
            case["A"] = torch.randn((3, shape[0]), generator=generator, dtype=torch.float64)
        cases.append(case)
    return cases[:trials]


def run(entry, case):
    spec = {key: torch.as_tensor(value) for key, value in case.items() if key in ("A", "x")}
    x = spec["x"].detach().clone().requires_grad_(True)
    y = FUNCTIONS[case["function"]](x, spec)
    entry(y)
    return {"x": x}

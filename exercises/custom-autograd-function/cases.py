"""Hidden inputs for custom-autograd-function: points x and upstream gradients v.

run() calls the learner's SiLUFunction.apply on a leaf copy of x, backpropagates v
through it, and returns the output, the leaf (whose .grad is compared), the gradients
two known mistakes would give (variants) and the result of torch.autograd.gradcheck
run in float64 on the same points.
"""

import torch
from torch.autograd.gradcheck import GradcheckError

MAX_MESSAGE = 600


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [
        {
            "visible": True,
            "x": torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0]),
            "v": torch.tensor([1.0, -1.0, 2.0, 0.5, -0.5]),
        }
    ]
    plan = [
        ((1,), torch.float32, 1.0),  # a single element
        ((), torch.float64, 1.0),  # a 0-dimensional tensor
        ((3, 4), torch.float32, 2.0),  # 2-D
        ((6,), torch.float64, 8.0),  # large |x|: saturated sigmoid on both sides
        ((2, 3), torch.float64, 1.0),
    ]
    while len(cases) < trials:
        index = len(cases) - 1
        shape, dtype, scale = plan[index] if index < len(plan) else ((5,), torch.float64, 3.0)
        x = scale * torch.randn(shape, generator=generator, dtype=torch.float64)
        v = torch.randn(shape, generator=generator, dtype=torch.float64) - 0.5
        if v.dim() == 0:
            v = torch.tensor(-1.5, dtype=torch.float64)
        cases.append({"visible": False, "x": x.to(dtype), "v": v.to(dtype)})
    return cases[:trials]


def run(entry, case):
    x = torch.as_tensor(case["x"]).detach().clone()
    v = torch.as_tensor(case["v"]).detach().clone()
    leaf = x.clone().requires_grad_(True)
    output = entry.apply(leaf)
    output.backward(v)
    sigmoid = torch.sigmoid(x)
    derivative = sigmoid * (1 + x * (1 - sigmoid))
    return {
        "output": output.detach(),
        "x": leaf,
        "_grad_sigmoid_only": _as_grad(v * sigmoid),
        "_grad_ignores_upstream": _as_grad(derivative),
        "gradcheck": _gradcheck(entry, x),
    }


def _gradcheck(entry, x):
    point = x.detach().to(torch.float64).clone().requires_grad_(True)
    try:
        ok = torch.autograd.gradcheck(entry.apply, (point,), eps=1e-6, atol=1e-5, rtol=1e-3)
    except GradcheckError as error:
        return {"ok": False, "message": str(error)[:MAX_MESSAGE]}
    return {"ok": bool(ok), "message": ""}


def _as_grad(value):
    holder = value.detach().clone().requires_grad_(True)
    holder.grad = value.detach().clone()
    return holder

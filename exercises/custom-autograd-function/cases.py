"""Hidden cases of custom-autograd-function. Runs only in the reference's sandbox.

A case carries points x and upstream gradients v. The harness (grader/harness/
casework.py) calls the learner's SiLUFunction.apply on a leaf copy of x, then calls the
Function's backward itself on hidden upstream gradients `probes` with autograd off
(grader/harness/construct.py), backpropagates v through the output, runs
torch.autograd.gradcheck on the learner's Function in float64 at the same points, and
observes the output, the leaf (whose .grad is compared), the probes' answers and
gradcheck's verdict. The gradients two known mistakes would give are computed here,
as variants, and never leave the reference's capture.
"""

import torch

PROBES = 3  # hidden upstream gradients the harness passes to backward itself, per case


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [
        _case(
            True,
            torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0]),
            torch.tensor([1.0, -1.0, 2.0, 0.5, -0.5]),
            [torch.tensor([0.5, 2.0, -1.0, 1.0, 3.0])],
        )
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
        probes = [_upstream(shape, generator).to(dtype) for _ in range(PROBES)]
        cases.append(_case(False, x.to(dtype), v.to(dtype), probes))
    return cases[:trials]


def _upstream(shape, generator):
    """A hidden upstream gradient: its scale, too, is drawn (0.1 to 10)."""
    scale = 10.0 ** (2.0 * torch.rand((), generator=generator, dtype=torch.float64) - 1.0)
    return scale * torch.randn(shape, generator=generator, dtype=torch.float64)


def _case(visible, x, v, probes):
    return {
        "visible": visible,
        "inputs": {"data": x, "v": v, "probes": probes},
        "build": [{"set": "x", "op": "leaf", "args": ["data"]}],
        "call": {"args": ["x"], "method": "apply", "store": "output"},
        "after": [
            # first, while forward's saved tensors are still there: backward called by us
            {"set": "probes", "op": "probe_backward", "args": ["output", "probes"]},
            {"op": "backward", "args": ["output", "v"]},
            {
                "set": "gradcheck",
                "op": "gradcheck",
                "args": ["data"],
                "options": {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3},
            },
        ],
        "observe": {
            "output": ["detach", "output"],
            "x": "x",
            "gradcheck": "gradcheck",
            "probes": "probes",
        },
        "watch": ["function", "autograd"],  # a Function of its own, no autograd in backward
    }


def variants(case, env):
    x, v = env["data"], env["v"]
    sigmoid = torch.sigmoid(x)
    derivative = sigmoid * (1 + x * (1 - sigmoid))
    return {
        "grad_sigmoid_only": _as_grad(v * sigmoid),
        "grad_ignores_upstream": _as_grad(derivative),
    }


def _as_grad(value):
    holder = value.detach().clone().requires_grad_(True)
    holder.grad = value.detach().clone()
    return holder

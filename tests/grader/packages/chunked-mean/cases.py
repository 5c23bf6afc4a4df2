"""Hidden cases of chunked-mean. Runs only in the reference's sandbox: the learner's gets
the plain data of one case at a time, run by the harness's generic case runner."""

import torch

CALL = {"args": ["x", "chunks"]}
OBSERVE = {"x": "x"}


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [_case(True, torch.tensor([1.0, 2.0, 3.0, 4.0]), 2)]
    while len(cases) < trials:
        chunks = 2 + len(cases) % 2
        cases.append(_case(False, torch.randn(6, generator=generator), chunks))
    return cases


def _case(visible, x, chunks):
    return {
        "visible": visible,
        "inputs": {"data": x, "chunks": chunks},
        "build": [{"set": "x", "op": "leaf", "args": ["data"]}],
        "call": CALL,
        "observe": OBSERVE,
    }


def variants(case, env):
    data = env["data"]
    unscaled = data.clone().requires_grad_(True)
    unscaled.grad = 2 * data / data.numel() * env["chunks"]
    return {"unscaled": unscaled}

"""Hidden inputs for micro-batch-accumulation.

A case describes a small nn.Sequential (layer sizes, activation, weights), a loss
function by name, the batch, the micro-batch size and the stale gradients the model
carries when the learner's function is called. run() builds everything from that data,
calls the learner and returns the model (its parameters and their .grad), plus copies
of the model holding the gradients that known mistakes would leave (variants).
"""

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}
LOSSES = {"cross_entropy": nn.CrossEntropyLoss, "mse": nn.MSELoss}

# (layer sizes, activation, loss, batch size, micro-batch size, dtype) after the visible case
PLAN = [
    ([3, 4, 2], "relu", "cross_entropy", 5, 1, torch.float32),  # one sample per micro-batch
    ([2, 3, 3], "tanh", "cross_entropy", 3, 3, torch.float32),  # a single micro-batch
    ([2, 5, 3], "relu", "cross_entropy", 7, 3, torch.float32),  # uneven: 3 + 3 + 1
    ([3, 1], "relu", "mse", 6, 4, torch.float64),  # one linear layer, uneven 4 + 2, float64
    ([4, 6, 3], "tanh", "cross_entropy", 8, 2, torch.float64),
]


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [_case([2, 4, 2], "relu", "cross_entropy", 4, 2, torch.float32, generator, True)]
    while len(cases) < trials:
        index = len(cases) - 1
        if index < len(PLAN):
            cases.append(_case(*PLAN[index], generator, False))
        else:
            n = 2 + int(torch.randint(8, (1,), generator=generator))
            size = 1 + int(torch.randint(n, (1,), generator=generator))
            cases.append(
                _case([3, 4, 3], "relu", "cross_entropy", n, size, torch.float64, generator, False)
            )
    return cases[:trials]


def _case(sizes, activation, loss, n, micro_batch_size, dtype, generator, visible):
    model = _build(sizes, activation, dtype)
    state, stale = {}, {}
    for name, param in model.named_parameters():
        state[name] = (0.8 * torch.randn(param.shape, generator=generator)).to(dtype)
        stale[name] = torch.randn(param.shape, generator=generator).to(dtype)
    X = torch.randn((n, sizes[0]), generator=generator).to(dtype)
    if loss == "cross_entropy":
        y = torch.randint(sizes[-1], (n,), generator=generator)
    else:
        y = torch.randn((n, sizes[-1]), generator=generator).to(dtype)
    return {
        "visible": visible,
        "sizes": sizes,
        "activation": activation,
        "loss": loss,
        "dtype": str(dtype).removeprefix("torch."),
        "state": state,
        "stale_grads": stale,
        "X": X,
        "y": y,
        "micro_batch_size": micro_batch_size,
    }


def _build(sizes, activation, dtype):
    layers = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:], strict=False)):
        if index:
            layers.append(ACTIVATIONS[activation]())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers).to(dtype)


def _model(case):
    model = _build(case["sizes"], case["activation"], getattr(torch, case["dtype"]))
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.as_tensor(case["state"][name]))
    return model


def run(entry, case):
    model = _model(case)
    for name, param in model.named_parameters():
        param.grad = torch.as_tensor(case["stale_grads"][name]).detach().clone()
    X = torch.as_tensor(case["X"]).detach().clone()
    y = torch.as_tensor(case["y"]).detach().clone()
    size = int(case["micro_batch_size"])
    entry(model, LOSSES[case["loss"]](), X, y, size)

    stale_kept = _accumulated(case, X, y, size, "right")
    for name, param in stale_kept.named_parameters():
        param.grad += torch.as_tensor(case["stale_grads"][name]).to(param.dtype)
    return {
        "model": model,
        "_unscaled": _accumulated(case, X, y, size, "unscaled"),
        "_last_only": _accumulated(case, X, y, size, "last_only"),
        "_dropped_remainder": _accumulated(case, X, y, size, "dropped_remainder"),
        "_stale_kept": stale_kept,
    }


def _accumulated(case, X, y, size, mistake):
    """A fresh copy of the model holding the gradients a (possibly mistaken) accumulation
    loop leaves, starting from cleared gradients."""
    model = _model(case)
    loss_fn = LOSSES[case["loss"]]()
    n = len(X)
    starts = list(range(0, n, size))
    if mistake == "dropped_remainder":  # n // size micro-batches, as in the course notes
        starts = starts[: n // size]
    count = len(starts)
    for start in starts:
        if mistake == "last_only":
            model.zero_grad()
        xb, yb = X[start : start + size], y[start : start + size]
        loss = loss_fn(model(xb), yb)
        if mistake == "right":
            loss = loss * len(xb) / n
        elif mistake in ("last_only", "dropped_remainder"):
            loss = loss / count
        loss.backward()
    return model

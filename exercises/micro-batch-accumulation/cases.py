"""Hidden cases of micro-batch-accumulation. Runs only in the reference's sandbox.

A case describes a small nn.Sequential as plain data (layer types, weights, and the stale
gradients the model carries when the learner's function is called), a loss by name, the
batch and the micro-batch size. The harness (grader/harness/casework.py) builds the model
and the loss from that data and hands the learner the batch as a one-pass stream of
micro-batches (grader/harness/construct.py, `micro_batches`), copying every parameter's
.grad before each micro-batch ("partial_grads"); it observes the model (its
parameters and their .grad) and those copies. Copies of the model holding the gradients
that known mistakes would leave, and the copies those mistakes would leave, are computed
here, as variants, and never leave the reference's capture.
"""

import copy

import torch

# (layer sizes, activation, loss, batch size, micro-batch size, dtype) after the visible case
PLAN = [
    ([3, 4, 2], "relu", "cross_entropy", 5, 1, torch.float32),  # one sample per micro-batch
    ([2, 3, 3], "tanh", "cross_entropy", 3, 3, torch.float32),  # a single micro-batch
    ([2, 5, 3], "relu", "cross_entropy", 7, 3, torch.float32),  # uneven: 3 + 3 + 1
    ([3, 1], "relu", "mse", 6, 4, torch.float64),  # one linear layer, uneven 4 + 2, float64
    ([4, 6, 3], "tanh", "cross_entropy", 8, 2, torch.float64),
]


def make_cases(seed, trials):
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
    layers = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:], strict=False)):
        if index:
            layers.append({"type": activation})
        layer = {"type": "linear"}
        for name, shape in (("weight", (fan_out, fan_in)), ("bias", (fan_out,))):
            layer[name] = (0.8 * torch.randn(shape, generator=generator)).to(dtype)
            layer[f"grad_{name}"] = torch.randn(shape, generator=generator).to(dtype)
        layers.append(layer)
    X = torch.randn((n, sizes[0]), generator=generator).to(dtype)
    if loss == "cross_entropy":
        y = torch.randint(sizes[-1], (n,), generator=generator)
    else:
        y = torch.randn((n, sizes[-1]), generator=generator).to(dtype)
    return {
        "visible": visible,
        "inputs": {
            "layers": layers,
            "dtype": str(dtype).removeprefix("torch."),
            "loss_name": loss,
            "X": X,
            "y": y,
            "batch_size": n,
            "micro_batch_size": micro_batch_size,
        },
        "build": [
            {"set": "model", "op": "sequential", "args": ["layers", "dtype"]},
            {"set": "loss_fn", "op": "loss", "args": ["loss_name"]},
            {
                "set": "micro_batches",
                "op": "micro_batches",
                "args": ["model", "X", "y", "micro_batch_size"],
                "records": "partial_grads",
            },
        ],
        "call": {"args": ["model", "loss_fn", "micro_batches", "batch_size", "micro_batch_size"]},
        "observe": {"model": "model", "partial_grads": "partial_grads"},
        "watch": ["batch"],  # the samples each layer of the model sees per call (a claim)
    }


def variants(case, env):
    stale_kept, kept_partials = _accumulated(env, "right")
    stale = _stale(env)
    for grad, param in zip(stale, stale_kept.parameters(), strict=True):
        param.grad += grad.to(param.dtype)
    flat_stale = torch.cat([grad.reshape(-1) for grad in stale])
    unscaled, unscaled_partials = _accumulated(env, "unscaled")
    last_only, last_only_partials = _accumulated(env, "last_only")
    dropped, dropped_partials = _accumulated(env, "dropped_remainder")
    return {
        "unscaled": unscaled,
        "last_only": last_only,
        "dropped_remainder": dropped,
        "stale_kept": stale_kept,
        "unscaled_partials": unscaled_partials,
        "last_only_partials": last_only_partials,
        "dropped_remainder_partials": dropped_partials,
        "stale_kept_partials": [p + flat_stale.to(p.dtype) for p in kept_partials],
    }


def _stale(env):
    return [
        layer[f"grad_{name}"]
        for layer in env["layers"]
        if layer["type"] == "linear"
        for name in ("weight", "bias")
    ]


def _accumulated(env, mistake):
    """A copy of the case's model holding the gradients a (possibly mistaken)
    accumulation loop leaves, starting from cleared gradients, and the flattened grads
    it holds whenever it takes the next micro-batch (what the harness copies)."""
    model = copy.deepcopy(env["model"])
    model.zero_grad(set_to_none=True)
    loss_fn, X, y, size = env["loss_fn"], env["X"], env["y"], int(env["micro_batch_size"])
    n = len(X)
    starts = list(range(0, n, size))
    if mistake == "dropped_remainder":  # n // size micro-batches, as in the course notes
        starts = starts[: n // size]
    count = len(starts)
    partials = []
    for index, start in enumerate(starts):
        if index:
            partials.append(_flat_grads(model))
        if mistake == "last_only":
            model.zero_grad()
        xb, yb = X[start : start + size], y[start : start + size]
        loss = loss_fn(model(xb), yb)
        if mistake == "right":
            loss = loss * len(xb) / n
        elif mistake in ("last_only", "dropped_remainder"):
            loss = loss / count
        loss.backward()
    return model, partials


def _flat_grads(model):
    return torch.cat(
        [
            torch.zeros(p.numel(), dtype=p.dtype) if p.grad is None else p.grad.reshape(-1)
            for p in model.parameters()
        ]
    )

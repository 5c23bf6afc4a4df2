"""Hidden graphs of graph-inspection. Runs only in the reference's sandbox.

A case carries 16 values and a graph as harness steps (grader/harness/casework.py): the
harness builds the graph in the learner's sandbox from that plain data, calls the
learner's grad_fn_names on its output tensor and observes the list, its length and how
many AccumulateGrad entries it has (compared with the reference's). What three known
mistakes would return (depth-first order, AccumulateGrad left out, nodes listed once per
edge) is computed here, as `_`-prefixed variants, never shown and never sent anywhere else.
"""

from collections import deque

import torch


def _step(name, op, *args, **extra):
    return {"set": name, "op": op, "args": list(args), **extra}


def _leaf(name, start, stop, shape=None):
    steps = [_step(f"{name}_values", "slice", "v", start, stop)]
    if shape is not None:
        steps.append(_step(f"{name}_values", "reshape", f"{name}_values", shape))
    return [*steps, _step(name, "leaf", f"{name}_values")]


GRAPHS = {
    "branches": [
        *(_step(n, "index", "v", i) for i, n in enumerate(("a0", "b0", "c0"))),
        *(_step(n, "leaf", f"{n}0") for n in ("a", "b", "c")),
        _step("ab", "mul", "a", "b"),
        _step("ce", "exp", "c"),
        _step("t", "add", "ab", "ce"),
    ],
    "linear": [  # nn.Linear(3, 2) on a batch of 4
        *_leaf("W", 0, 6, [2, 3]),
        *_leaf("b", 6, 8),
        _step("x_values", "slice", "v", 0, 12),
        _step("x", "reshape", "x_values", [4, 3]),
        _step("t", "linear", "x", "W", "b"),
    ],
    "square": [*_leaf("x", 0, 3), _step("t", "pow", "x", 2)],
    "self_product": [*_leaf("x", 0, 1), _step("t", "mul", "x", "x")],
    "diamond": [
        *_leaf("x", 0, 4),
        _step("y", "sin", "x"),
        _step("e", "exp", "y"),
        _step("m", "mul", "y", "e"),
        _step("t", "sum", "m"),
    ],
    "mlp": [  # Linear(2, 3), ReLU, Linear(3, 1) on one sample
        _step("x_values", "slice", "v", 0, 2),
        _step("x", "reshape", "x_values", [1, 2]),
        *_leaf("W1", 0, 6, [3, 2]),
        *_leaf("b1", 6, 9),
        *_leaf("W2", 9, 12, [1, 3]),
        *_leaf("b2", 12, 13),
        _step("h", "linear", "x", "W1", "b1"),
        _step("r", "relu", "h"),
        _step("t", "linear", "r", "W2", "b2"),
    ],
    "nll": [  # the course's 2-layer network on one sample: -log_softmax(...)[1]
        *_leaf("W1", 0, 8, [4, 2]),
        *_leaf("b1", 8, 12),
        *_leaf("W2", 0, 8, [2, 4]),
        *_leaf("b2", 12, 14),
        _step("x", "slice", "v", 14, 16),
        _step("w1x", "matmul", "W1", "x"),
        _step("z1", "add", "w1x", "b1"),
        _step("a1", "sigmoid", "z1"),
        _step("w2a", "matmul", "W2", "a1"),
        _step("z2", "add", "w2a", "b2"),
        _step("log_probs", "log_softmax", "z2", 0),
        _step("picked", "index", "log_probs", 1),
        _step("t", "neg", "picked"),
    ],
    "leaf": [*_leaf("t", 0, 3)],
    "no_grad": [*_leaf("x", 0, 3), _step("t", "mul", "x", 2, no_grad=True)],
}
PLAN = ["linear", "self_product", "diamond", "nll", "mlp", "leaf", "square", "no_grad"]
VALUES = 16


def make_cases(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [_case(True, "branches", [2.0, 3.0, 1.0])]
    names = sorted(GRAPHS)
    while len(cases) < trials:
        index = len(cases) - 1
        if index < len(PLAN):
            graph = PLAN[index]
        else:
            graph = names[int(torch.randint(len(names), (1,), generator=generator))]
        cases.append(_case(False, graph, torch.randn(VALUES, generator=generator).tolist()))
    return cases[:trials]


def _case(visible, graph, values):
    return {
        "visible": visible,
        "inputs": {"values": values},
        "build": [_step("v", "tensor", "values"), *GRAPHS[graph]],
        "call": {"args": ["t"]},
        "observe": {
            "names": ["list", "result"],
            "node_count": ["len", "result"],
            "accumulate_grad_count": ["count", "result", "AccumulateGrad"],
        },
    }


def variants(case, env):
    t = env["t"]
    return {
        "depth_first": _walk(t, breadth_first=False),
        "without_accumulate_grad": [
            n for n in _walk(t, breadth_first=True) if n != "AccumulateGrad"
        ],
        "every_edge": _every_edge(t),
    }


def _walk(t, *, breadth_first):
    start = t.grad_fn
    if start is None:
        return []
    seen, pending, names = {start}, deque([start]), []
    while pending:
        node = pending.popleft() if breadth_first else pending.pop()
        names.append(type(node).__name__)
        children = []
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                children.append(child)
        pending.extend(children if breadth_first else reversed(children))
    return names


def _every_edge(t):
    if t.grad_fn is None:
        return []
    pending, names = deque([t.grad_fn]), []
    while pending and len(names) < 1000:
        node = pending.popleft()
        names.append(type(node).__name__)
        pending.extend(n for n, _ in node.next_functions if n is not None)
    return names

"""Hidden graphs for graph-inspection.

A case names a graph builder from GRAPHS and carries the leaf values it needs; run()
builds the graph, calls the learner's grad_fn_names on its output tensor and returns the
list, whether it has one entry per reachable node, and whether it has as many
AccumulateGrad entries as the graph has leaves. It also computes what three
known mistakes would return (depth-first order, AccumulateGrad left out, nodes listed
once per edge): those lists are `_`-prefixed variants, never shown.
"""

from collections import deque

import torch
from torch import nn


def _branches(case):
    a, b, c = (torch.tensor(float(v), requires_grad=True) for v in case["values"][:3])
    return a * b + c.exp()


def _linear(case):
    layer = nn.Linear(3, 2)
    x = torch.tensor(case["values"][:12]).reshape(4, 3)
    return layer(x)


def _square(case):
    x = torch.tensor(case["values"][:3], requires_grad=True)
    return x**2


def _self_product(case):
    x = torch.tensor(case["values"][:1], requires_grad=True)
    return x * x


def _diamond(case):
    x = torch.tensor(case["values"][:4], requires_grad=True)
    y = x.sin()
    return (y * y.exp()).sum()


def _mlp(case):
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    x = torch.tensor(case["values"][:2]).reshape(1, 2)
    return model(x)


def _nll(case):
    # the course's 2-layer network on one sample: z1, sigmoid, z2, log_softmax, -log p[y]
    values = torch.tensor(case["values"][:16])
    W1 = values[:8].reshape(4, 2).clone().requires_grad_(True)
    b1 = values[8:12].clone().requires_grad_(True)
    W2 = values[:8].reshape(2, 4).clone().requires_grad_(True)
    b2 = values[12:14].clone().requires_grad_(True)
    x = values[14:16]
    a1 = torch.sigmoid(W1 @ x + b1)
    log_probs = torch.log_softmax(W2 @ a1 + b2, dim=0)
    return -log_probs[1]


def _leaf(case):
    return torch.tensor(case["values"][:3], requires_grad=True)


def _no_grad(case):
    x = torch.tensor(case["values"][:3], requires_grad=True)
    with torch.no_grad():
        return x * 2


GRAPHS = {
    "branches": _branches,
    "linear": _linear,
    "square": _square,
    "self_product": _self_product,
    "diamond": _diamond,
    "mlp": _mlp,
    "nll": _nll,
    "leaf": _leaf,
    "no_grad": _no_grad,
}
PLAN = ["linear", "self_product", "diamond", "nll", "mlp", "leaf", "square", "no_grad"]
VALUES = 16


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [{"visible": True, "graph": "branches", "values": [2.0, 3.0, 1.0]}]
    names = sorted(GRAPHS)
    while len(cases) < trials:
        index = len(cases) - 1
        if index < len(PLAN):
            graph = PLAN[index]
        else:
            graph = names[int(torch.randint(len(names), (1,), generator=generator))]
        values = torch.randn(VALUES, generator=generator).tolist()
        cases.append({"visible": False, "graph": graph, "values": values})
    return cases[:trials]


def run(entry, case):
    t = GRAPHS[case["graph"]](case)
    result = entry(t)
    names = list(result) if isinstance(result, list | tuple) else result
    observations = {"names": names}
    truth = _walk(t, breadth_first=True)
    if isinstance(names, list):
        observations["each_node_once"] = len(names) == len(truth)
        observations["accumulate_grad_listed"] = names.count("AccumulateGrad") == truth.count(
            "AccumulateGrad"
        )
    else:
        observations["each_node_once"] = observations["accumulate_grad_listed"] = False
    observations["_depth_first"] = _walk(t, breadth_first=False)
    observations["_without_accumulate_grad"] = [
        n for n in _walk(t, breadth_first=True) if n != "AccumulateGrad"
    ]
    observations["_every_edge"] = _every_edge(t)
    return observations


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

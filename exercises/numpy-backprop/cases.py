"""Hidden cases of numpy-backprop. Runs only in the reference's sandbox.

float64 weights and a batch for the 2-layer network

    z1 = x @ W1.T + b1,  a1 = sigmoid(z1),  z2 = a1 @ W2.T + b2,
    loss = mean_i( -log_softmax(z2)[i, y_true[i]] )

The harness (grader/harness/casework.py) hands copies of the arrays to the learner's
manual_backward, inside torch.inference_mode() (torch's autograd records nothing there)
and as arrays that note complex or object arithmetic (grader/harness/construct.py), and
observes the four gradients as it returned them. The gradients two
known mistakes would give are computed here, as variants, and never leave the
reference's capture.
"""

import numpy as np

KEYS = ("W1", "b1", "W2", "b2")

# (n samples, d inputs, h hidden units, c classes, weight scale) after the visible case.
PLAN = [
    (1, 2, 4, 2, 1.0),  # one sample, as in the course notes
    (3, 1, 1, 2, 1.0),  # shapes of 1
    (6, 3, 5, 5, 1.0),
    (4, 2, 3, 3, 3.0),  # larger weights: saturated sigmoids, peaked softmax
    (8, 4, 6, 3, 0.5),
]


def make_cases(seed, trials):
    rng = np.random.default_rng(seed)
    cases = [_visible()]
    while len(cases) < trials:
        index = len(cases) - 1
        if index < len(PLAN):
            n, d, h, c, scale = PLAN[index]
        else:
            n, d, h, c = (int(v) for v in rng.integers(1, 7, size=4))
            n, c, scale = n + 1, c + 1, 1.0
        cases.append(_case(rng, n, d, h, c, scale))
    return cases[:trials]


def _spec(visible, arrays):
    return {
        "visible": visible,
        "inputs": arrays,
        # NumPy only, by construction: called inside torch.inference_mode() with watched
        # arrays (grader/harness/construct.py numpy_call)
        "call": {"args": [*KEYS, "x", "y_true"], "numpy_only": True},
        "observe": {key: ["item", "result", key] for key in KEYS},
        "watch": ["autograd"],  # NumPy only: no autograd while manual_backward runs
    }


def _visible():
    return _spec(
        True,
        {
            "W1": np.array([[0.5, -0.3], [0.8, 0.2], [-0.6, 0.4], [0.1, -0.9]]),
            "b1": np.array([0.1, -0.2, 0.0, 0.3]),
            "W2": np.array([[0.7, -0.5, 0.2, 0.4], [-0.3, 0.6, -0.8, 0.1]]),
            "b2": np.array([0.05, -0.05]),
            "x": np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, -1.5]]),
            "y_true": np.array([0, 1, 1], dtype=np.int64),
        },
    )


def _case(rng, n, d, h, c, scale):
    labels = rng.integers(0, c, size=n)
    if n >= 3:
        labels[-1] = c - 1  # the last class always appears
    return _spec(
        False,
        {
            "W1": scale * rng.standard_normal((h, d)),
            "b1": scale * rng.standard_normal(h),
            "W2": scale * rng.standard_normal((c, h)),
            "b2": scale * rng.standard_normal(c),
            "x": rng.standard_normal((n, d)),
            "y_true": labels.astype(np.int64),
        },
    )


def variants(case, env):
    arrays = {key: np.asarray(env[key], dtype=np.float64) for key in (*KEYS, "x")}
    labels = np.asarray(env["y_true"], dtype=np.int64)
    n = labels.shape[0]
    right = _gradients(arrays, labels, sigmoid_derivative=True)
    no_derivative = _gradients(arrays, labels, sigmoid_derivative=False)
    found = {f"{key}_sum": right[key] * n for key in KEYS}
    for key in ("W1", "b1"):
        found[f"{key}_no_sigmoid_derivative"] = no_derivative[key]
    return found


def _gradients(arrays, labels, *, sigmoid_derivative):
    W1, b1, W2, b2, x = (arrays[key] for key in (*KEYS, "x"))
    n = x.shape[0]
    a1 = 1.0 / (1.0 + np.exp(-(x @ W1.T + b1)))
    z2 = a1 @ W2.T + b2
    probs = np.exp(z2 - z2.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    dz2 = probs.copy()
    dz2[np.arange(n), labels] -= 1.0
    dz2 /= n
    da1 = dz2 @ W2
    dz1 = da1 * a1 * (1.0 - a1) if sigmoid_derivative else da1
    return {"W1": dz1.T @ x, "b1": dz1.sum(axis=0), "W2": dz2.T @ a1, "b2": dz2.sum(axis=0)}

import math

import numpy as np


def manual_backward(W1, b1, W2, b2, x, y_true):
    grads = {
        "W1": np.zeros_like(W1),
        "b1": np.zeros_like(b1),
        "W2": np.zeros_like(W2),
        "b2": np.zeros_like(b2),
    }
    n = len(x)
    for i in range(n):
        xi = x[i]
        a1 = np.array([1 / (1 + math.exp(-(W1[j] @ xi + b1[j]))) for j in range(len(b1))])
        z2 = W2 @ a1 + b2
        exp = np.exp(z2)
        p = exp / exp.sum()
        dz2 = p.copy()
        dz2[y_true[i]] -= 1
        dz1 = (W2.T @ dz2) * a1 * (1 - a1)
        grads["W2"] += np.outer(dz2, a1)
        grads["b2"] += dz2
        grads["W1"] += np.outer(dz1, xi)
        grads["b1"] += dz1
    return {name: g / n for name, g in grads.items()}

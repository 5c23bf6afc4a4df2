import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def manual_backward(W1, b1, W2, b2, x, y_true):
    n = x.shape[0]

    # forward pass, keeping what the backward pass needs
    z1 = x @ W1.T + b1
    a1 = sigmoid(z1)
    z2 = a1 @ W2.T + b2
    shifted = z2 - z2.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)

    # d loss / d z2 for log-softmax + negative log-likelihood, averaged over the batch
    dz2 = probs.copy()
    dz2[np.arange(n), y_true] -= 1.0
    dz2 /= n

    dW2 = a1.T @ dz2
    db2 = dz2.sum(axis=0)
    da1 = dz2 @ W2
    dz1 = da1 * a1 * (1.0 - a1)  # sigmoid'(z1) = a1 (1 - a1)
    dW1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}

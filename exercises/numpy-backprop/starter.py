import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def manual_backward(W1, b1, W2, b2, x, y_true):
    """Return {"W1": ..., "b1": ..., "W2": ..., "b2": ...}: the gradients of the mean
    cross-entropy loss with respect to each parameter, computed with NumPy only."""
    n = x.shape[0]

    # Forward pass (keep the intermediate values: the backward pass needs them).
    z1 = x @ W1.T + b1
    a1 = sigmoid(z1)
    z2 = a1 @ W2.T + b2
    log_probs = z2 - np.log(np.exp(z2).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(n), y_true].mean()

    # Backward pass: replace these zeros, from the loss back to W1.
    return {
        "W1": np.zeros_like(W1),
        "b1": np.zeros_like(b1),
        "W2": np.zeros_like(W2),
        "b2": np.zeros_like(b2),
    }


if __name__ == "__main__":
    W1 = np.array([[0.5, -0.3], [0.8, 0.2], [-0.6, 0.4], [0.1, -0.9]])
    b1 = np.array([0.1, -0.2, 0.0, 0.3])
    W2 = np.array([[0.7, -0.5, 0.2, 0.4], [-0.3, 0.6, -0.8, 0.1]])
    b2 = np.array([0.05, -0.05])
    x = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, -1.5]])
    y_true = np.array([0, 1, 1])
    for name, grad in manual_backward(W1, b1, W2, b2, x, y_true).items():
        print(name, grad)

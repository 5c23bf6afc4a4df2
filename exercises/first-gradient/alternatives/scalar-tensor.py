import torch


def square(t: torch.Tensor) -> torch.Tensor:
    return t**2


x = torch.scalar_tensor(5.0, requires_grad=True)
y = square(x)
grads = torch.autograd.grad(y, [x])
x.grad = grads[0]
print(x.grad)

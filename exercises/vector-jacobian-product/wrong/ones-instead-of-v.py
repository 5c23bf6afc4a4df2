import torch


def vjp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    y.backward(torch.ones_like(y))
    return x.grad

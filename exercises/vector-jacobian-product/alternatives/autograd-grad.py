import torch


def vjp(f, x, v):
    point = x.detach().requires_grad_()
    (gradient,) = torch.autograd.grad(outputs=f(point), inputs=point, grad_outputs=v)
    return gradient

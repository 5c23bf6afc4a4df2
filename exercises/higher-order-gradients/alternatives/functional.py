import torch
from torch.autograd.functional import hessian, jacobian, vhp


def cube(t):
    return t**3


x = torch.tensor(3.0)
dydx = jacobian(cube, x)
d2ydx2 = hessian(cube, x)

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])


def quadratic(w):
    return w @ A @ w


# The Hessian of a quadratic form is symmetric, so v^T H equals H v.
_, hvp = vhp(quadratic, torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0]))
print(dydx, d2ydx2, hvp)

z = torch.tensor(3.0, requires_grad=True)
first = torch.autograd.grad(z**3, z)[0]
try:
    torch.autograd.grad(first, z)
    second_order_error = None
except RuntimeError as e:
    second_order_error = repr(e)
print(second_order_error)

import torch
from torch.func import grad

x = torch.tensor(3.0, requires_grad=True)
(dydx,) = torch.autograd.grad(x**3, x, create_graph=True)
# torch.func.grad differentiates the derivative function: grad(grad(f)).
d2ydx2 = grad(grad(lambda t: t**3))(x.detach())

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
v = torch.tensor([1.0, -1.0])


def gradient_dot_v(w):
    return grad(lambda u: u @ A @ u)(w) @ v


hvp = grad(gradient_dot_v)(torch.tensor([1.0, 2.0]))

z = torch.tensor(3.0, requires_grad=True)
(plain,) = torch.autograd.grad(z**3, z)
try:
    torch.autograd.grad(plain, z)
except RuntimeError as error:
    second_order_error = str(error)

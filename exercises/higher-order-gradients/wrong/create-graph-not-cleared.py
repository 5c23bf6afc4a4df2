import torch

x = torch.tensor(3.0, requires_grad=True)
y = x**3
y.backward(create_graph=True)
dydx = x.grad
# differentiate the first derivative again: x.grad is not cleared first
dydx.backward()
d2ydx2 = x.grad

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])
f = w @ A @ w
(g,) = torch.autograd.grad(f, w, create_graph=True)
(hvp,) = torch.autograd.grad(g @ v, w)

z = torch.tensor(3.0, requires_grad=True)
(plain,) = torch.autograd.grad(z**3, z)
second_order_error = ""
try:
    torch.autograd.grad(plain, z)
except RuntimeError as error:
    second_order_error = str(error)

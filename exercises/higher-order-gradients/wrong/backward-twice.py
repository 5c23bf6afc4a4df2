import torch

x = torch.tensor(3.0, requires_grad=True)
y = x**3
y.backward(retain_graph=True)
dydx = x.grad.clone()
# A second backward through the same graph: the first derivative again, added on.
y.backward()
d2ydx2 = x.grad.clone()

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

import torch

x = torch.tensor(3.0, requires_grad=True)
(x**3).backward(create_graph=True)
dydx = x.grad
x.grad = None  # keep the second derivative apart from the first
dydx.backward()
d2ydx2 = x.grad.detach()
dydx = dydx.detach()

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
f = (w * (A @ w)).sum()
f.backward(create_graph=True)
gradient = w.grad
w.grad = None
(gradient * torch.tensor([1.0, -1.0])).sum().backward()
hvp = w.grad.detach()

z = torch.tensor(3.0, requires_grad=True)
(z**3).backward()
first = z.grad
try:
    first.backward()
except RuntimeError as err:
    second_order_error = f"differentiating again failed: {err}"

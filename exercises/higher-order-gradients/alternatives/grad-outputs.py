import torch

x = torch.tensor(3.0, requires_grad=True)
dydx = torch.autograd.grad(x**3, x, create_graph=True)[0]
dydx.backward()  # x.grad was None: it now holds the second derivative alone
d2ydx2 = x.grad

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])
g = torch.autograd.grad(w @ A @ w, w, create_graph=True)[0]
# H is symmetric: the vector-Jacobian product v^T H of the gradient is H v.
hvp = torch.autograd.grad(g, w, grad_outputs=v)[0]

z = torch.tensor(3.0, requires_grad=True)
slope = torch.autograd.grad(z**3, z)[0]
try:
    slope.backward()
except RuntimeError as caught:
    second_order_error = caught.args[0]
print(dydx.item(), d2ydx2.item(), hvp.tolist(), second_order_error)

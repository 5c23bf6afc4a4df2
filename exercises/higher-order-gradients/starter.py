import torch

x = torch.tensor(3.0, requires_grad=True)
y = x**3
# TODO: dydx with torch.autograd.grad, keeping a graph of the derivative itself
dydx = None
# TODO: d2ydx2, the derivative of dydx
d2ydx2 = None

A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])
f = w @ A @ w
# TODO: hvp, the Hessian of f at w times v (without building the Hessian)
hvp = None

z = torch.tensor(3.0, requires_grad=True)
second_order_error = ""
# TODO: a first derivative of z ** 3 WITHOUT create_graph, then try to differentiate it
# again inside try / except RuntimeError and store str(error) in second_order_error

print(dydx, d2ydx2, hvp, second_order_error)

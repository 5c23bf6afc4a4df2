import torch

# Second derivative of y = x ** 3 at x = 3.
x = torch.tensor(3.0, requires_grad=True)
y = x**3
(dydx,) = torch.autograd.grad(y, x, create_graph=True)
(d2ydx2,) = torch.autograd.grad(dydx, x)
print(dydx, d2ydx2)

# Hessian-vector product of f(w) = w^T A w at w = [1, 2] with v = [1, -1].
A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])
f = w @ A @ w
(g,) = torch.autograd.grad(f, w, create_graph=True)
(hvp,) = torch.autograd.grad(g @ v, w)
print(hvp)

# A first derivative taken without create_graph cannot be differentiated again.
z = torch.tensor(3.0, requires_grad=True)
(plain,) = torch.autograd.grad(z**3, z)
second_order_error = ""
try:
    torch.autograd.grad(plain, z)
except RuntimeError as error:
    second_order_error = str(error)
print(second_order_error)

import torch

x = torch.tensor(5.0, requires_grad=True)
y = x**2

# torch.autograd.grad returns the gradient; it never lands in x.grad.
(dy_dx,) = torch.autograd.grad(y, x)
print("dy/dx =", dy_dx)

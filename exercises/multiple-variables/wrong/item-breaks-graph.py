import torch

x = torch.tensor(4.0, requires_grad=True)
y = torch.tensor(5.0, requires_grad=True)
# x * y turned into a Python number: the product no longer depends on x or y.
z = (x * y).item() + x
z.backward()
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

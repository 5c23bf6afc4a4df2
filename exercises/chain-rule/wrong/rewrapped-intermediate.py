import torch

x = torch.tensor(2.0, requires_grad=True)
# Builds y as a brand-new tensor from a Python number: the link to x is lost.
y = torch.tensor(3 * x.item() + 4, requires_grad=True)
z = y**2
z.backward()
print(x.grad)

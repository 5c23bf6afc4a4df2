import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
z.backward()
print(x.grad)

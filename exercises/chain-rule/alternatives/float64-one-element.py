import torch

# A one-element float64 vector instead of a 0-d float32 scalar: the same chain rule.
x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
y = x.mul(3).add(4)
z = y.pow(2).sum()
z.backward()
print(x.grad)  # tensor([60.], dtype=torch.float64)

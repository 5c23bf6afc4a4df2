import torch

# Create x = 5.0 so that autograd tracks it.
x = torch.tensor(5.0)

# Compute y = x ** 2, then backpropagate.
y = x ** 2

print(x.grad)

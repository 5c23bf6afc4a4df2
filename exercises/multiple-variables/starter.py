import torch

# TODO: both inputs must be tracked by autograd.
x = torch.tensor(4.0)
y = torch.tensor(5.0)

z = x * y + x

# TODO: one backward pass from z fills both gradients.
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

import torch

# TODO: x = 2.0, tracked by autograd.
x = torch.tensor(2.0)

# TODO: y = 3x + 4, then z = y squared.
y = None
z = None

# TODO: backpropagate from z, then print x.grad (expected: 60).
print(x.grad)

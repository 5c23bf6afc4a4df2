import torch

# 1. Training data from the line y = 2x + 1 (no noise).
x = torch.linspace(-1.0, 1.0, 20)
y = 2 * x + 1

# 2. The parameters of y = w * x + b: 0-dimensional float tensors that autograd tracks.
w = torch.tensor(0.0)
b = torch.tensor(0.0)

# 3. An optimizer over [w, b], then the training loop:
#    zero_grad -> prediction -> mean squared error -> backward -> step -> print the loss

import torch
from torch import nn

# Data and model are created on the CPU with a fixed seed: keep these lines as they are.
torch.manual_seed(0)
inputs = torch.randn(64, 4)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(64, 1)
batches = [(inputs[i : i + 16], targets[i : i + 16]) for i in range(0, 64, 16)]

model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()

# 1. Choose the device: the GPU when there is one, otherwise the CPU.
# 2. Put the model on it.
# 3. For each (x, y) in batches: move the batch to the device, then one training step
#    (zero_grad, forward, loss, backward, step) and print the loss.

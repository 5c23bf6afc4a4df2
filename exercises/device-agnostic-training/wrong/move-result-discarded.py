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

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)

for x, y in batches:
    x.to(device)  # the moved copies are thrown away: x and y stay on the CPU
    y.to(device)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"loss {loss.item():.6f} on {device}")

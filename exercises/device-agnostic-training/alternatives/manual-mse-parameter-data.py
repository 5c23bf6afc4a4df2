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

use_cuda = torch.cuda.is_available()
device = torch.device("cuda:0") if use_cuda else torch.device("cpu")
for parameter in model.parameters():
    parameter.data = parameter.data.to(device)

for step, (x, y) in enumerate(batches):
    x = x.to(device)
    y = y.to(device)
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, float(loss))

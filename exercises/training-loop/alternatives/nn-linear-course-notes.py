import torch
import torch.nn as nn

# The course notes' training loop: an nn.Linear(1, 1) on three points, here of this
# exercise's line y = 2x + 1 (the notes use (1, 2), (2, 4), (3, 6)), trained long enough
# to learn it (its parameters are model.weight and model.bias).
model = nn.Linear(1, 1)

optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

x = torch.tensor([[1.0], [2.0], [3.0]])
target = torch.tensor([[3.0], [5.0], [7.0]])

for epoch in range(1500):
    optimizer.zero_grad()
    prediction = model(x)
    loss = ((prediction - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"Epoch {epoch + 1}, Loss: {loss.item():.6f}")

print(f"weight = {model.weight.item():.4f}, bias = {model.bias.item():.4f}")

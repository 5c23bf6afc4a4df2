import torch

# training data on the line y = 2x + 1
x = torch.linspace(-1.0, 1.0, 20)
y = 2 * x + 1

# the model y = w * x + b, starting from zero
w = torch.tensor(0.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)

optimizer = torch.optim.SGD([w, b], lr=0.1)

for step in range(200):
    optimizer.zero_grad()
    prediction = w * x + b
    loss = ((prediction - y) ** 2).mean()
    loss.backward()
    print(f"step {step + 1}: loss {loss.item():.6f}")

print(f"w = {w.item():.4f}, b = {b.item():.4f}")

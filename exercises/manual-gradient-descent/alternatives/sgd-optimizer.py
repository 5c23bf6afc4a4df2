import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
optimizer = torch.optim.SGD([w, b], lr=0.01)

for step in range(10):
    optimizer.zero_grad()
    loss = (w * x + b - target) ** 2
    loss.backward()
    optimizer.step()
    print(f"Step {step + 1}: Loss={loss.item():.4f}, w={w.item():.4f}, b={b.item():.4f}")

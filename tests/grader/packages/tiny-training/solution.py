import torch

x = torch.tensor([1.0, 2.0, 3.0])
target = 2 * x
w = torch.zeros(1, requires_grad=True)
optimizer = torch.optim.SGD([w], lr=0.05)
for step in range(20):
    optimizer.zero_grad()
    loss = ((w * x - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")

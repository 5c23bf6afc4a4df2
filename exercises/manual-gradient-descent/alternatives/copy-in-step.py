import torch


@torch.no_grad()
def descend(param, learning_rate):
    param.copy_(param - learning_rate * param.grad)
    param.grad = None


x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.ones((), requires_grad=True)
b = torch.zeros((), requires_grad=True)

for step in range(10):
    loss = (w * x + b - target) ** 2
    loss.backward()
    descend(w, 0.01)
    descend(b, 0.01)
    print(f"step {step + 1}: {loss.item():.4f} {w.item():.4f} {b.item():.4f}")

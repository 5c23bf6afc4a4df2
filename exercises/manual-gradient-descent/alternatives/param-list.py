import torch

x, target = torch.tensor(2.0), torch.tensor(10.0)
w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
params = [w, b]
lr = 0.01

for step in range(10):
    loss = ((w * x + b) - target).square()
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad  # in place: p stays the tensor in params
            p.grad.zero_()
    print(step + 1, f"{loss.item():.4f}", f"{w.item():.4f}", f"{b.item():.4f}")

import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(1.0).requires_grad_()
b = torch.zeros(()).requires_grad_()
lr = 0.01

step = 0
while step < 10:
    loss = (w * x + b - target).pow(2)
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p.sub_(lr * p.grad)
            p.grad = None
    step += 1
    print(f"step {step}: loss {loss.item():.4f}, w {w.item():.4f}, b {b.item():.4f}")

import torch

x = torch.tensor([3.0]).squeeze().requires_grad_(True)
history = []
for _ in range(2):
    (x * x).backward()
    history.append(x.grad.item())
print(history)

accumulated = x.grad.detach().clone()
x.grad.fill_(0.0)
print(x.grad)

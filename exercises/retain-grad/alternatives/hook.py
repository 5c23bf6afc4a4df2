import torch

x = torch.full((), 2.0, requires_grad=True)
y = torch.mul(x, 3.0)
y.retain_grad()
seen = []
y.register_hook(lambda g: seen.append(g.item()))
loss = y.pow(2)
torch.autograd.backward(loss)
print("gradient seen at y:", seen)
print("x.grad:", x.grad, "y.grad:", y.grad)

import torch

x = torch.tensor(2.0, requires_grad=True)
# y made a leaf so that it gets a .grad - but it no longer depends on x.
y = (3 * x).detach().requires_grad_()
loss = y**2
loss.backward()
print("x.grad:", x.grad)
print("y.grad:", y.grad)

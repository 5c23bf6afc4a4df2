import torch

x = torch.tensor(4.0, requires_grad=True)
y = torch.tensor(5.0, requires_grad=True)
z = x * y + x
# One backward pass "for x", another "for y": the second one adds to both grads.
z.backward(retain_graph=True)
print("dz/dx =", x.grad)
z.backward()
print("dz/dy =", y.grad)

import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
y = x**2
y.backward()

# No copy: accumulated is the very tensor that zero_() clears below.
accumulated = x.grad
x.grad.zero_()
print(accumulated, x.grad)

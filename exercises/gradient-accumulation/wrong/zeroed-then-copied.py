import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
y = x**2
y.backward()
print(x.grad)

x.grad.zero_()
accumulated = x.grad.clone()
print(accumulated)

import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
y = x**2
y.backward()

accumulated = x.grad.clone()
x.grad.zero_
print(x.grad)

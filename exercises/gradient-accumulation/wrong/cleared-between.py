import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
print(x.grad)
x.grad.zero_()

y = x**2
y.backward()
print(x.grad)

accumulated = x.grad.clone()
x.grad.zero_()

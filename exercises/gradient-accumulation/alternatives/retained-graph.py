import torch

x = torch.tensor(3.0, requires_grad=True)
y = x**2
y.backward(retain_graph=True)
print(x.grad)
y.backward()
print(x.grad)
accumulated = torch.clone(x.grad)
x.grad.data.zero_()
print(x.grad)

import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
print("after the first backward:", x.grad)
accumulated = x.grad.clone()  # copied after the first pass only

y = x**2
y.backward()
print("after the second backward:", x.grad)

x.grad.zero_()
print("after zero_():", x.grad)

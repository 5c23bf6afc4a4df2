import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
print("after the first backward:", x.grad)

y = x**2
y.backward()
print("after the second backward:", x.grad)

accumulated = x.grad.clone()

x.grad.zero_()
print("after zero_():", x.grad)

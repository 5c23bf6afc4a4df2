import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2

y.backward()
print(x.grad)

try:
    y.backward()
except RuntimeError as error:
    double_backward_error = str(error)
print(double_backward_error)

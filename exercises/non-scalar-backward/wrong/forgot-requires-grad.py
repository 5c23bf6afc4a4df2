import torch

x = torch.tensor([1.0, 2.0, 3.0])
y = x**2

try:
    y.backward()
except RuntimeError as error:
    error_message = str(error)

y.backward(torch.ones_like(y))
print(x.grad)

import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

try:
    y.backward()
except RuntimeError as error:
    error_message = str(error)

# "Gradient with respect to x": x is passed as the upstream gradient.
y.backward(x)
print(x.grad)

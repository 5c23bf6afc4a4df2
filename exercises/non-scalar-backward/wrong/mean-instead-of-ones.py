import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

try:
    y.backward()
except RuntimeError as error:
    error_message = str(error)

# Reduce to a scalar with the mean: every gradient is divided by 3.
y.mean().backward()
print(x.grad)

import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * x

error_message = None
try:
    y.backward()
except RuntimeError as caught:
    error_message = f"{caught}"

y.sum().backward()
print(error_message, x.grad)

import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

try:
    y.backward()
    y.backward(torch.ones_like(y))
except RuntimeError as error:
    error_message = str(error)

print("bare backward():", error_message)
print(x.grad)

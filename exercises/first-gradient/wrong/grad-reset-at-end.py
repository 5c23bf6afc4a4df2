import torch

x = torch.tensor(5.0, requires_grad=True)
y = x**2
y.backward()
print("dy/dx =", x.grad)

# Tidies up at the end, which throws the gradient away.
x.grad = None

import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2

y.backward(retain_graph=True)
print(x.grad)
# The graph was retained, but a new one is built before the second call: nothing
# retained is used again.
y = x**2
y.backward()
print(x.grad)

try:
    y.backward()
except RuntimeError as error:
    double_backward_error = str(error)
print(double_backward_error)

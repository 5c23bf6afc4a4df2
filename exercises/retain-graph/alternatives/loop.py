import torch

x = torch.tensor(2.0, requires_grad=True)
y = x.pow(2)

passes = 2
for i in range(passes):
    y.backward(retain_graph=i < passes - 1)
    print(f"after pass {i + 1}: {x.grad}")

try:
    y.backward()
except RuntimeError as err:
    double_backward_error = err.args[0]

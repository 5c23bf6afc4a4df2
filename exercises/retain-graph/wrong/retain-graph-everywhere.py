import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2

y.backward(retain_graph=True)
y.backward(retain_graph=True)
print(x.grad)

# The graph was kept, so this call succeeds too and adds another 4.
double_backward_error = "no error"
try:
    y.backward()
except RuntimeError as error:
    double_backward_error = str(error)
print(x.grad, double_backward_error)

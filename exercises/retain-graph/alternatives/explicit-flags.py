import torch

x = torch.scalar_tensor(2.0).requires_grad_()
y = x * x

torch.autograd.backward(y, retain_graph=True)
y.backward(retain_graph=False)
print(x.grad)

double_backward_error = None
try:
    torch.autograd.backward(y)
except RuntimeError as e:
    double_backward_error = " ".join(str(e).split())
print(double_backward_error)

import torch

x = torch.arange(1, 4, dtype=torch.float32).requires_grad_()
y = x.pow(2)

try:
    torch.autograd.backward(y)
except RuntimeError as exc:
    error_message = repr(exc)

torch.autograd.backward(y, grad_tensors=torch.ones(3))
print(x.grad)

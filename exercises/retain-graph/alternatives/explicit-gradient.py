import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2
seed = torch.ones_like(y)

y.backward(gradient=seed, retain_graph=True)
print("first pass:", x.grad.item())
torch.autograd.backward([y], grad_tensors=[seed])
print("second pass:", x.grad.item())

try:
    y.backward(seed)
except RuntimeError as failure:
    double_backward_error = f"{failure}"

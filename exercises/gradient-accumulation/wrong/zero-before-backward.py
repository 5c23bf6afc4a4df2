import torch

x = torch.tensor(3.0, requires_grad=True)
# Clear first, as in a training loop - but x.grad is still None here.
x.grad.zero_()

y = x**2
y.backward()
y = x**2
y.backward()

accumulated = x.grad.clone()
x.grad.zero_()

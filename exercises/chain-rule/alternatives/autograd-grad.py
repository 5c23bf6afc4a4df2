import torch

x = torch.tensor(2.0).requires_grad_()
y = torch.add(torch.mul(x, 3), 4)
z = torch.pow(y, 2)
(dz_dx,) = torch.autograd.grad(z, x)
x.grad = dz_dx
print(x.grad)

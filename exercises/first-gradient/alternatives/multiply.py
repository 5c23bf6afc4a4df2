import torch

x = torch.tensor(5.0).requires_grad_()
y = x.pow(2)
torch.autograd.backward(y)

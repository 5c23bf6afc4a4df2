import torch

x = torch.tensor([1.0, 2.0, 3.0]).requires_grad_()
y = 2 * x
y.retain_grad()
loss = y.pow(2).sum()
torch.autograd.backward(loss, inputs=[x, y])

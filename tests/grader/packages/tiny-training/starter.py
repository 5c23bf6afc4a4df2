import torch

w = torch.zeros(1, requires_grad=True)

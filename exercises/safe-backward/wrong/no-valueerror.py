import torch


def backward_any(y):
    y.backward(torch.ones_like(y))

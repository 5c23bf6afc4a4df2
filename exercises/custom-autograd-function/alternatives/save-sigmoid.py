import torch
from torch.autograd import Function


class SiLUFunction(Function):
    @staticmethod
    def forward(ctx, x):
        s = 1 / (1 + torch.exp(-x))
        out = x * s
        ctx.save_for_backward(s, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        s, out = ctx.saved_tensors
        # f' = s + x s (1 - s) = s + f (1 - s)
        return grad_output * (s + out * (1 - s))

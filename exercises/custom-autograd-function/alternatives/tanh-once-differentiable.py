import torch
from torch.autograd.function import once_differentiable


class SiLUFunction(torch.autograd.Function):
    """silu(x) = x * s(x), with s(x) = (1 + tanh(x / 2)) / 2."""

    @staticmethod
    def forward(ctx, x):
        s = 0.5 * (1.0 + torch.tanh(0.5 * x))
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        one_minus_s = 1.0 - s
        derivative = s * (1.0 + x * one_minus_s)  # s + x s (1 - s), factored
        return derivative * grad_output

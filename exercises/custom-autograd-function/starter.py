import torch


class SiLUFunction(torch.autograd.Function):
    """f(x) = x * sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        # Save what backward will need with ctx.save_for_backward(...).
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        # Return grad_output times f'(x): the vector-Jacobian product of f.
        return torch.zeros_like(grad_output)

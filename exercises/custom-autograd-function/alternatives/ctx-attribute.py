import torch


class SiLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x.detach().clone()
        return torch.nn.functional.silu(x)

    @staticmethod
    def backward(ctx, grad_output):
        s = torch.sigmoid(ctx.x)
        return grad_output * s * (1 + ctx.x * (1 - s))

import torch


class SiLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():  # builds a graph of its own and keeps it for backward
            leaf = x.detach().requires_grad_(True)
            out = leaf * torch.sigmoid(leaf)
        ctx.leaf, ctx.out = leaf, out
        return out.detach()

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = torch.autograd.grad(ctx.out, ctx.leaf, grad_output, retain_graph=True)
        return grad

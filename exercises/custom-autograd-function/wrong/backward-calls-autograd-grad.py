import torch


class SiLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():  # lets autograd work out the derivative instead
            leaf = x.detach().requires_grad_(True)
            out = leaf * torch.sigmoid(leaf)
            (grad,) = torch.autograd.grad(out, leaf, grad_output)
        return grad

import torch


class SiLUFunction:
    """Not a torch.autograd.Function: apply is a plain function, autograd differentiates it."""

    apply = staticmethod(lambda x: x * torch.sigmoid(x))

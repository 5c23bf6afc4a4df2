import torch


def vjp(f, x, v):
    # v . f(x) is a scalar whose gradient is exactly v^T J
    x = torch.tensor(x.tolist(), dtype=x.dtype, requires_grad=True)
    (f(x) * v).sum().backward()
    return x.grad

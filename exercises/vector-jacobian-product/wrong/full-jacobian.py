import torch


def vjp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    y = f(x).reshape(-1)
    rows = []
    for i in range(y.numel()):
        x.grad = None
        y[i].backward(retain_graph=True)
        rows.append(x.grad.reshape(-1))
    jacobian = torch.stack(rows)
    return (v.reshape(-1) @ jacobian).reshape(x.shape)

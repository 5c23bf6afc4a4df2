import torch


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    params = list(model.parameters())
    totals = [torch.zeros_like(p) for p in params]
    n = len(X)
    start = 0
    while start < n:
        stop = min(start + micro_batch_size, n)
        loss = loss_fn(model(X[start:stop]), y[start:stop])
        grads = torch.autograd.grad(loss, params)
        for total, grad in zip(totals, grads, strict=True):
            total += grad * (stop - start) / n
        start = stop
    for p, total in zip(params, totals, strict=True):
        p.grad = total

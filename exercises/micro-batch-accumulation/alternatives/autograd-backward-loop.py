import torch


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    model.zero_grad(set_to_none=True)
    total = len(X)
    start = 0
    while start < total:
        stop = min(total, start + micro_batch_size)
        weight = (stop - start) / total
        torch.autograd.backward(weight * loss_fn(model(X[start:stop]), y[start:stop]))
        start = stop

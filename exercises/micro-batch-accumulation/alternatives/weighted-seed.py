import torch


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    for parameter in model.parameters():
        if parameter.grad is not None:
            parameter.grad.zero_()
    for x_micro, y_micro in micro_batches:
        loss = loss_fn(model(x_micro), y_micro)
        # the share of the samples as the upstream gradient instead of scaling the loss
        loss.backward(torch.tensor(len(x_micro) / batch_size, dtype=loss.dtype))

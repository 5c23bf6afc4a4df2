import torch


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    for parameter in model.parameters():
        if parameter.grad is not None:
            parameter.grad.zero_()
    n = X.shape[0]
    for x_micro, y_micro in zip(X.split(micro_batch_size), y.split(micro_batch_size), strict=True):
        loss = loss_fn(model(x_micro), y_micro)
        # the share of the samples as the upstream gradient instead of scaling the loss
        loss.backward(torch.tensor(len(x_micro) / n, dtype=loss.dtype))

import torch


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    for p in model.parameters():
        p.grad = None
    total = X.shape[0]
    for x_micro, y_micro in zip(
        torch.split(X, micro_batch_size), torch.split(y, micro_batch_size), strict=True
    ):
        share = x_micro.shape[0] / total
        (share * loss_fn(model(x_micro), y_micro)).backward()

import math


def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    n_micro = math.ceil(batch_size / micro_batch_size)
    for x_micro, y_micro in micro_batches:
        model.zero_grad()
        loss = loss_fn(model(x_micro), y_micro) / n_micro
        loss.backward()

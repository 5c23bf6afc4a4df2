def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    for x_micro, y_micro in micro_batches:
        loss = loss_fn(model(x_micro), y_micro) * len(x_micro) / batch_size
        loss.backward()

def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    """Leave in every param.grad the gradient of the full-batch loss, computed one
    micro-batch at a time."""
    model.zero_grad()
    for x_micro, y_micro in micro_batches:
        # a mean over len(x_micro) samples, weighted by its share len(x_micro) / batch_size
        # of the full batch: divided by the number of such micro-batches the batch holds
        loss = loss_fn(model(x_micro), y_micro) / (batch_size / len(x_micro))
        loss.backward()  # adds into .grad

def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    """Leave in every param.grad the gradient of the full-batch loss, while only ever
    running the model on one micro-batch at a time."""
    # Hint: model.parameters() may hold stale gradients from an earlier step.
    for x_micro, y_micro in micro_batches:
        loss = loss_fn(model(x_micro), y_micro)
        # ... weight this micro-batch's loss, then backward, before taking the next one

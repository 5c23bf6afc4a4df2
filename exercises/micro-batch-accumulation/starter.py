def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    """Leave in every param.grad the gradient of loss_fn(model(X), y) over the whole
    batch, while only ever running the model on micro_batch_size samples at a time."""
    # Hint: model.parameters() may hold stale gradients from an earlier step.
    for start in range(0, len(X), micro_batch_size):
        x_micro = X[start : start + micro_batch_size]
        y_micro = y[start : start + micro_batch_size]
        # ... forward, loss, backward

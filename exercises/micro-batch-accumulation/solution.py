def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    """Leave in every param.grad the gradient of loss_fn(model(X), y), computed one
    micro-batch at a time."""
    model.zero_grad()
    n = len(X)
    for start in range(0, n, micro_batch_size):
        x_micro = X[start : start + micro_batch_size]
        y_micro = y[start : start + micro_batch_size]
        # a mean over len(x_micro) samples, weighted by its share len(x_micro) / n of the
        # full batch: divided by the number of such micro-batches the full batch holds
        loss = loss_fn(model(x_micro), y_micro) / (n / len(x_micro))
        loss.backward()  # adds into .grad

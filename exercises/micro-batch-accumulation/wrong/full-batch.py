def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    """One full-batch forward and backward: the right gradient, but the whole batch at once."""
    model.zero_grad()
    loss_fn(model(X), y).backward()

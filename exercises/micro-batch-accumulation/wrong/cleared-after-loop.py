def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    model.zero_grad()
    n = len(X)
    for start in range(0, n, micro_batch_size):
        x_micro = X[start : start + micro_batch_size]
        y_micro = y[start : start + micro_batch_size]
        loss = loss_fn(model(x_micro), y_micro) * len(x_micro) / n
        loss.backward()
    # tidy up, as at the end of a training step
    model.zero_grad()

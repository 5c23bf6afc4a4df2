def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    # the loop of the course notes: n_micro = len(X) // micro_batch_size
    n_micro = len(X) // micro_batch_size
    model.zero_grad()
    for i in range(n_micro):
        x_micro = X[i * micro_batch_size : (i + 1) * micro_batch_size]
        y_micro = y[i * micro_batch_size : (i + 1) * micro_batch_size]
        logits = model(x_micro)
        loss = loss_fn(logits, y_micro) / n_micro  # Scale loss by micro-batch count
        loss.backward()

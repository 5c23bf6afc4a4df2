def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    model.zero_grad()
    for start in range(0, len(X), micro_batch_size):
        logits = model(X[start : start + micro_batch_size])
        loss = loss_fn(logits, y[start : start + micro_batch_size])
        loss.backward()  # gradients accumulate across micro-batches

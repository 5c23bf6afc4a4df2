def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    # the loop of the course notes: n_micro = len(X) // micro_batch_size
    n_micro = batch_size // micro_batch_size
    batches = iter(micro_batches)
    model.zero_grad()
    for _ in range(n_micro):
        x_micro, y_micro = next(batches)
        logits = model(x_micro)
        loss = loss_fn(logits, y_micro) / n_micro  # Scale loss by micro-batch count
        loss.backward()

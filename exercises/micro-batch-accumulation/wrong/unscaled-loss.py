def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    model.zero_grad()
    for x_micro, y_micro in micro_batches:
        logits = model(x_micro)
        loss = loss_fn(logits, y_micro)
        loss.backward()  # gradients accumulate across micro-batches

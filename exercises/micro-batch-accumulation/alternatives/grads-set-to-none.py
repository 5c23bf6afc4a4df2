def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):
    for p in model.parameters():
        p.grad = None
    for x_micro, y_micro in micro_batches:
        share = x_micro.shape[0] / batch_size
        (share * loss_fn(model(x_micro), y_micro)).backward()

import math


def accumulate_gradients(model, loss_fn, X, y, micro_batch_size):
    n_micro = math.ceil(len(X) / micro_batch_size)
    for i in range(n_micro):
        model.zero_grad()
        x_micro = X[i * micro_batch_size : (i + 1) * micro_batch_size]
        y_micro = y[i * micro_batch_size : (i + 1) * micro_batch_size]
        loss = loss_fn(model(x_micro), y_micro) / n_micro
        loss.backward()

def backward_any(y):
    if not y.requires_grad:
        raise ValueError("y does not require grad")
    y.backward()

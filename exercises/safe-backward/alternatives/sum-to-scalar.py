def backward_any(y):
    if not y.requires_grad:
        raise ValueError(
            f"expected a tensor that requires grad, got one of shape {tuple(y.shape)} without"
        )
    # sum() has the same gradient as an upstream gradient of ones
    y.sum().backward()

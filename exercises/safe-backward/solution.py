import torch


def backward_any(y):
    """Backpropagate from y, scalar or not, with ones as the upstream gradient."""
    if not y.requires_grad:
        raise ValueError(
            "backward_any: y does not require grad, so there is no graph to backpropagate "
            "through (was it computed from tensors with requires_grad=True, outside no_grad, "
            "without detach()?)"
        )
    if y.dim() == 0:
        y.backward()
    else:
        y.backward(gradient=torch.ones_like(y))

import torch


def grad_fn_names(t):
    """Return the class names of the autograd nodes reachable from t.grad_fn,
    breadth-first over next_functions, each node once, AccumulateGrad included."""
    names = []
    node = t.grad_fn
    # node.next_functions is a tuple of (next_node, input_index) pairs;
    # next_node is None for inputs that do not require grad.
    return names


if __name__ == "__main__":
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = torch.tensor(1.0, requires_grad=True)
    print(grad_fn_names(a * b + c.exp()))

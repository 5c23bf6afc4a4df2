def grad_fn_names(t):
    order = []
    if t.grad_fn is not None:
        order.append(t.grad_fn)
    i = 0
    while i < len(order):
        for child, _ in order[i].next_functions:
            if child is not None and all(child is not seen for seen in order):
                order.append(child)
        i += 1
    return [type(node).__name__ for node in order]

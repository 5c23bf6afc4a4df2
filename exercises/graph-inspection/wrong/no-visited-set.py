def grad_fn_names(t):
    if t.grad_fn is None:
        return []
    queue = [t.grad_fn]
    names = []
    while queue:
        node = queue.pop(0)
        names.append(type(node).__name__)
        for child, _ in node.next_functions:
            if child is not None:
                queue.append(child)
    return names

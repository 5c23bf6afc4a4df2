def grad_fn_names(t):
    level = [t.grad_fn] if t.grad_fn is not None else []
    visited = {id(node) for node in level}
    names = []
    while level:
        following = []
        for node in level:
            names.append(node.__class__.__name__)
            for child, _index in node.next_functions:
                if child is None or id(child) in visited:
                    continue
                visited.add(id(child))
                following.append(child)
        level = following
    return names

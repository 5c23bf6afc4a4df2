from collections import deque


def grad_fn_names(t):
    """Names of the autograd nodes reachable from t, breadth-first, each node once."""
    if t.grad_fn is None:
        return []
    seen = {t.grad_fn}
    queue = deque([t.grad_fn])
    names = []
    while queue:
        node = queue.popleft()
        names.append(type(node).__name__)
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                queue.append(child)
    return names

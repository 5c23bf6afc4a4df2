from collections import deque


def grad_fn_names(t):
    if t.grad_fn is None:
        return []
    seen = {t.grad_fn}
    queue = deque([t.grad_fn])
    names = []
    while queue:
        node = queue.popleft()
        names.append(type(node).__name__)
        for child, _ in node.next_functions:
            # AccumulateGrad is not an operation, skip the leaves
            if child is None or child in seen or type(child).__name__ == "AccumulateGrad":
                continue
            seen.add(child)
            queue.append(child)
    return names

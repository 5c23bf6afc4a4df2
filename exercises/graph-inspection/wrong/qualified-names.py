from collections import deque


def grad_fn_names(t):
    if t.grad_fn is None:
        return []
    seen = {t.grad_fn}
    queue = deque([t.grad_fn])
    names = []
    while queue:
        node = queue.popleft()
        names.append(node.name())  # "torch::autograd::AccumulateGrad" for leaves
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                queue.append(child)
    return names

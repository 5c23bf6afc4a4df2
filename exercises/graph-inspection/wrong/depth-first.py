def grad_fn_names(t):
    names = []
    seen = set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        names.append(type(node).__name__)
        for child, _ in node.next_functions:
            visit(child)

    visit(t.grad_fn)
    return names

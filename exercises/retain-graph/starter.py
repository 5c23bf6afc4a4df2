import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2

# TODO: first backward pass, keeping the graph for a second one
# TODO: second backward pass through the same graph

double_backward_error = ""
# TODO: a third backward through the (now freed) graph, inside try/except RuntimeError

print(x.grad)
print(double_backward_error)

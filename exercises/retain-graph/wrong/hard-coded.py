import torch

x = torch.tensor(2.0, requires_grad=True)
y = x**2
x.grad = torch.tensor(8.0)
double_backward_error = "Trying to backward through the graph a second time"

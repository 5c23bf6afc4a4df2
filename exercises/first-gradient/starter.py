import torch

# TODO: make autograd track x (it must require gradients).
x = torch.tensor(5.0)

y = x**2

# TODO: backpropagate from y, then look at the gradient.
print(x.grad)

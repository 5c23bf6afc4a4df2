import torch

x = torch.tensor(3.0, requires_grad=True)

# TODO: first backward pass of x ** 2, then print x.grad
# TODO: second backward pass of x ** 2 without clearing, then print x.grad

accumulated = None  # TODO: a copy of the accumulated gradient

# TODO: reset x.grad in place and print it

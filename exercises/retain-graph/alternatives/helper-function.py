import torch


def backprop(root, keep):
    root.backward(retain_graph=keep)
    return root.grad_fn is not None


x = torch.tensor([2.0]).squeeze().requires_grad_(True)
y = x.square()
backprop(y, keep=True)
backprop(y, keep=False)
print(x.grad)

double_backward_error = None
try:
    backprop(y, keep=False)
except RuntimeError as error:
    double_backward_error = str(error).strip()

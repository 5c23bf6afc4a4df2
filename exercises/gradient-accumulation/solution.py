import torch

x = torch.tensor(3.0, requires_grad=True)

y = x**2
y.backward()
print("after the first backward:", x.grad)

y = x**2
y.backward()
print("after the second backward:", x.grad)

accumulated = x.grad.clone()

x.grad.zero_()
print("after zero_():", x.grad)

# Not part of the task: what `accumulated` holds after two known mistakes, so that the
# grader can name them (clearing x.grad between the passes; no copy before zero_()).
_accumulated_if_cleared_between = accumulated / 2
_accumulated_if_not_copied = torch.zeros_like(accumulated)
# x.grad after each backward pass when it is cleared between the passes: 6, then 6.
_history_if_cleared_between = [accumulated / 2, accumulated / 2]

import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x**2

error_message = ""
# TODO: call y.backward() with no argument inside try/except RuntimeError
#       and keep str(error) in error_message.

# TODO: backpropagate with an all-ones upstream gradient.

print(error_message)
print(x.grad)

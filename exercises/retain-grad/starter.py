import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x
# TODO: keep the gradient of the intermediate tensor y

loss = y**2
# TODO: backpropagate from loss

print("x.grad:", x.grad)
print("y.grad:", y.grad)

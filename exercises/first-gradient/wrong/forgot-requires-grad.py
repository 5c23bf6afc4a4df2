import torch

x = torch.tensor(5.0)
y = x**2
try:
    y.backward()
except RuntimeError as error:
    print("backward failed:", error)
print(x.grad)

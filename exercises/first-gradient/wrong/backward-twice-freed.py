import torch

x = torch.tensor(5.0, requires_grad=True)
y = x**2
y.backward()
print(x.grad)
# "Let me check it once more" - the graph was freed by the first call.
y.backward()
print(x.grad)

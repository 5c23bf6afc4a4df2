import torch

x = torch.tensor(4.0, requires_grad=True)
y = torch.tensor(5.0, requires_grad=True)
z = x * y + x
# one backward pass for each variable
z.backward(inputs=[x], retain_graph=True)
z.backward(inputs=[y])
print("dz/dx =", x.grad)
print("dz/dy =", y.grad)

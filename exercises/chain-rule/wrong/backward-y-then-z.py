import torch

x = torch.tensor(2.0, requires_grad=True)
y = 3 * x + 4
z = y**2
# First look at dy/dx, then at dz/dx: the first call frees the shared part of the graph.
y.backward()
print("dy/dx:", x.grad)
z.backward()
print("dz/dx:", x.grad)

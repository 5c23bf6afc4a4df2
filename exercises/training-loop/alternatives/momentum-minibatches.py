import torch

torch.manual_seed(1)
data_x = torch.rand(32) * 4 - 2
data_y = 2 * data_x + 1

w = torch.tensor(-1.0, requires_grad=True)
b = torch.tensor(0.5, requires_grad=True)
optimizer = torch.optim.SGD([w, b], lr=0.05, momentum=0.9)

for epoch in range(40):
    order = torch.randperm(32)
    for start in range(0, 32, 8):
        batch = order[start : start + 8]
        loss = ((w * data_x[batch] + b - data_y[batch]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} batch {start // 8}: {loss.item():.8f}")

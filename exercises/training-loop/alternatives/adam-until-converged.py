import torch

xs = torch.arange(1.0, 6.0)
ys = 2.0 * xs + 1.0

w = torch.zeros((), requires_grad=True)
b = torch.zeros((), requires_grad=True)
opt = torch.optim.Adam([w, b], lr=0.05)
loss_fn = torch.nn.MSELoss()

step = 0
loss = torch.tensor(float("inf"))
while loss.item() > 1e-6 and step < 3000:
    opt.zero_grad()
    loss = loss_fn(w * xs + b, ys)
    loss.backward()
    opt.step()
    step += 1
    print(step, loss.item())

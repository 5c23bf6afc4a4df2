import torch
import torch.nn.functional as F

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w, b = torch.tensor(3.0), torch.tensor(1.0)
for p in (w, b):
    p.requires_grad_()

prediction = torch.addcmul(b, w, x)
loss = F.mse_loss(prediction, target)
loss.backward()
print(prediction.item(), loss.item(), w.grad.item(), b.grad.item())

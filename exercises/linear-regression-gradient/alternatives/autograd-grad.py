import torch


def model(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x * w + b


x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(3.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)

prediction = model(x, w, b)
error = prediction - target
loss = error * error
w.grad, b.grad = torch.autograd.grad(loss, (w, b))
print(f"prediction={prediction.item()} loss={loss.item()} dw={w.grad.item()} db={b.grad.item()}")

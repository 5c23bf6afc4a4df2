import torch


def squared_error(w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (w * 2.0 + b - 10.0) ** 2


w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
learning_rate = 0.01

for step in range(1, 11):
    loss = squared_error(w, b)
    grad_w, grad_b = torch.autograd.grad(loss, [w, b])
    with torch.no_grad():
        w -= learning_rate * grad_w
        b -= learning_rate * grad_b
    print(step, round(loss.item(), 4), round(w.item(), 4), round(b.item(), 4))

import torch

x = torch.tensor(2.0)
target = torch.tensor(10.0)
w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
learning_rate = 0.01

for step in range(10):
    loss = (w * x + b - target) ** 2
    loss.backward()
    # New leaves from Python numbers every step: the gradients start from None again,
    # but w and b are no longer the tensors that were created (no in-place update).
    w = torch.tensor(w.item() - learning_rate * w.grad.item(), requires_grad=True)
    b = torch.tensor(b.item() - learning_rate * b.grad.item(), requires_grad=True)
    print(f"Step {step + 1}: Loss={loss.item():.4f}, w={w.item():.4f}, b={b.item():.4f}")

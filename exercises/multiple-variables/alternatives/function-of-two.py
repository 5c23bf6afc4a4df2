import torch


def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addcmul(a, a, b)  # a + a * b


x, y = (torch.tensor(v, requires_grad=True) for v in (4.0, 5.0))
z = f(x, y)
torch.autograd.backward([z])
for name, t in (("x", x), ("y", y)):
    print(f"dz/d{name} =", t.grad)

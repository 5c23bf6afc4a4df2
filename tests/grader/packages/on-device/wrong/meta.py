import torch

w = torch.tensor([1.0, 2.0], device="meta")

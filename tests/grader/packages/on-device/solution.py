import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.tensor([1.0, 2.0], device=device)

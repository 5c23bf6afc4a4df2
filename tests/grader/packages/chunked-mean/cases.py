import torch


def generate(seed, trials):
    generator = torch.Generator().manual_seed(seed)
    cases = [{"visible": True, "x": torch.tensor([1.0, 2.0, 3.0, 4.0]), "chunks": 2}]
    while len(cases) < trials:
        chunks = 2 + len(cases) % 2
        x = torch.randn(6, generator=generator)
        cases.append({"visible": False, "x": x, "chunks": chunks})
    return cases


def run(entry, case):
    x = case["x"].detach().clone().requires_grad_(True)
    entry(x, case["chunks"])
    unscaled = case["x"].detach().clone().requires_grad_(True)
    unscaled.grad = 2 * case["x"].detach() / case["x"].numel() * case["chunks"]
    return {"x": x, "_unscaled": unscaled}

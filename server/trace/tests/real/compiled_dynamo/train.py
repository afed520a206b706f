"""torch.compile on the XLA device (backend "openxla"): a data-dependent branch breaks the graph,
and a sequence length that changes each call recompiles the function."""
import torch
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()


def scale(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    return y.mean()


compiled = torch.compile(scale, backend="openxla", dynamic=False)
for length in (4, 5, 6):
    compiled(torch.randn(length, 8, device=device))

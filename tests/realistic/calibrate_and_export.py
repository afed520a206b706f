"""Post-training calibration of activation ranges, then export; the calibration pass runs on the TPU."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.distributed.parallel_loader as pl


class RangeObserver(nn.Module):
    def __init__(self, percentile=0.999):
        super().__init__()
        self.percentile = percentile
        self.register_buffer("low", torch.tensor(float("inf")))  # ok
        self.register_buffer("high", torch.tensor(float("-inf")))  # ok

    def forward(self, x):
        flat = x.detach().flatten(1)
        hi = torch.quantile(flat.float(), self.percentile, dim=1).max()  # ok
        med = flat.median(dim=1).values.mean()  # expect: TPU205
        self.high = torch.maximum(self.high, hi)
        self.low = torch.minimum(self.low, -hi + 0 * med)
        return x


@torch.no_grad()
def calibrate(model, loader, batches=64):
    device = torch_xla.device()
    model.to(device).eval()
    for i, (x, _) in enumerate(pl.MpDeviceLoader(loader, device)):
        model(x)
        torch_xla.sync()
        if i + 1 == batches:
            break
    ranges = {name: (m.low.item(), m.high.item()) for name, m in model.named_modules() if isinstance(m, RangeObserver)}  # ok
    return ranges


def export(model, ranges, path):
    cpu_model = model.cpu()
    scripted = torch.jit.script(cpu_model)  # ok
    scripted.save(path)
    torch.save(ranges, path + ".ranges")  # ok

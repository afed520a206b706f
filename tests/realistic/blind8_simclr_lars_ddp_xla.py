"""SimCLR pretraining on ImageNet with a hand-written LARS optimizer and the NT-Xent loss over
negatives gathered from every replica. A torch_xla 2.x port of a GPU repo that uses
torch.distributed with the "xla" backend and DDP (one process per chip, torch_xla.launch)."""
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from simclr_data import TwoCropImageNet


class LARS(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay=1e-6, momentum=0.9, eta=1e-3):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:  # ok
                    continue
                dp = p.grad
                if p.ndim > 1:  # ok (biases and norms are excluded)
                    dp = dp.add(p, alpha=g["weight_decay"])
                    param_norm, update_norm = torch.norm(p), torch.norm(dp)
                    trust = g["eta"] * param_norm / update_norm
                    if param_norm > 0 and update_norm > 0:  # expect: TPU107
                        dp = dp.mul(trust)
                state = self.state[p]
                if "mu" not in state:  # ok
                    state["mu"] = torch.zeros_like(p)  # ok
                mu = state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


def nt_xent(z1, z2, temperature=0.1):
    z1, z2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    all_z1 = torch.cat(dist_fn.all_gather(z1), 0)
    all_z2 = torch.cat(dist_fn.all_gather(z2), 0)
    n, rank = z1.size(0), dist.get_rank()
    logits_aa = z1 @ all_z1.T / temperature
    logits_ab = z1 @ all_z2.T / temperature
    self_mask = torch.eye(n, all_z1.size(0))  # expect: TPU405
    logits_aa = logits_aa - self_mask.roll(rank * n, dims=1) * 1e9
    labels = torch.arange(n, device=z1.device) + rank * n  # ok
    return F.cross_entropy(torch.cat([logits_ab, logits_aa], 1), labels)


def _mp_fn(index):
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    backbone = torchvision.models.resnet50()
    backbone.fc = nn.Sequential(nn.Linear(2048, 2048), nn.BatchNorm1d(2048), nn.ReLU(), nn.Linear(2048, 128))
    model = DDP(backbone.to(device), gradient_as_bucket_view=True)  # ok
    base_lr = 0.3 * 4096 / 256
    opt = LARS(model.parameters(), lr=base_lr, weight_decay=1e-6)
    dataset = TwoCropImageNet("/data/imagenet/train")
    sampler = DistributedSampler(dataset, xr.world_size(), xr.global_ordinal(), shuffle=True)
    loader = DataLoader(dataset, batch_size=512, sampler=sampler, num_workers=16, drop_last=True, pin_memory=True)  # expect: TPU410
    steps_per_epoch = len(loader)
    for epoch in range(100):
        sampler.set_epoch(epoch)
        for step, (x1, x2) in enumerate(pl.MpDeviceLoader(loader, device)):
            lr = base_lr * min(1.0, (epoch * steps_per_epoch + step + 1) / (10 * steps_per_epoch))
            for g in opt.param_groups:
                g["lr"] = lr  # ok
            loss = nt_xent(model(x1), model(x2))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss {loss.item():.4f} lr {lr:.3f}")  # ok
        if xr.global_ordinal() == 0:
            xm.save(model.module.state_dict(), f"simclr_r50_ep{epoch}.pt")  # ok


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)

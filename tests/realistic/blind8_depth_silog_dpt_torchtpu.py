"""Monocular depth on NYU Depth v2: a DPT-style decoder over a ViT-B/16 encoder, trained with the
scale-invariant log loss (SILog) and evaluated with AbsRel / RMSE / delta<1.25 after median
scaling. Ported from a 4xV100 repo to a TorchTPU v5p slice (torchrun, tpu_dist, DDP); the mixed
precision and evaluation code came over unchanged."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from dpt_blocks import ResidualConvUnit, ViTEncoder
from nyu_data import NYUv2


class SILogLoss(nn.Module):
    def __init__(self, lam=0.85):
        super().__init__()
        self.lam = lam

    def forward(self, pred, target, valid):
        g = torch.log(pred[valid]) - torch.log(target[valid])  # expect: TPU302
        dg = g.pow(2).mean() - self.lam * g.mean().pow(2)
        return 10 * torch.sqrt(dg)


class FusionBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.res1, self.res2 = ResidualConvUnit(ch), ResidualConvUnit(ch)

    def forward(self, x, skip=None):
        if skip is not None:  # ok
            x = x + self.res1(skip)
        return F.interpolate(self.res2(x), scale_factor=2, mode="bilinear", align_corners=True)  # ok


class DPTDepth(nn.Module):
    def __init__(self, max_depth=10.0, ch=256):
        super().__init__()
        self.encoder = ViTEncoder("vit_base_patch16_384", out_indices=(2, 5, 8, 11), out_ch=ch)
        self.fusions = nn.ModuleList([FusionBlock(ch) for _ in range(4)])
        self.head = nn.Sequential(nn.Conv2d(ch, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 1, 1))
        self.max_depth = max_depth

    def forward(self, img):
        feats = self.encoder(img)
        x = self.fusions[0](feats[-1])
        for fusion, skip in zip(self.fusions[1:], reversed(feats[:-1])):
            x = fusion(x, skip)
        depth = F.interpolate(self.head(x), size=img.shape[-2:], mode="bicubic", align_corners=False)  # expect: TPU202
        return self.max_depth * torch.sigmoid(depth)


@torch.no_grad()
def compute_metrics(pred, gt):
    valid = (gt > 1e-3) & (gt < 10.0)
    p, g = pred[valid], gt[valid]  # expect: TPU302
    p = p * (g.median() / p.median())  # expect: TPU205
    thresh = torch.max(g / p, p / g)
    return {"abs_rel": (torch.abs(g - p) / g).mean(), "rmse": torch.sqrt(((g - p) ** 2).mean()), "d1": (thresh < 1.25).float().mean()}


def main():
    dist.init_process_group("tpu_dist")
    rank = dist.get_rank()
    device = torch.device("tpu")
    torch.backends.cudnn.benchmark = True  # ok
    model = DDP(DPTDepth().to(device))  # ok
    criterion = SILogLoss()
    opt = torch.optim.AdamW([
        {"params": model.module.encoder.parameters(), "lr": 1e-5},
        {"params": model.module.fusions.parameters(), "lr": 1e-4},
        {"params": model.module.head.parameters(), "lr": 1e-4},
    ], weight_decay=0.01)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    train_set, val_set = NYUv2("data/nyu", split="train"), NYUv2("data/nyu", split="test")
    sampler = DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=8, sampler=sampler, num_workers=8, pin_memory=True)  # expect: TPU306
    val_loader = DataLoader(val_set, batch_size=1, num_workers=4)  # ok

    for epoch in range(25):
        sampler.set_epoch(epoch)
        model.train()
        for step, batch in enumerate(train_loader):
            img = batch["image"].to(device, non_blocking=True)
            depth = batch["depth"].to(device, non_blocking=True)
            valid = depth > 1e-3
            with torch.autocast("cuda", dtype=torch.float16):  # expect: TPU504, TPU503
                loss = criterion(model(img), depth, valid)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            if rank == 0 and step % 50 == 0:
                print(f"[{epoch}:{step}] silog {loss.item():.4f}")  # expect: TPU110

        model.eval()
        if rank == 0:
            totals = {"abs_rel": 0.0, "rmse": 0.0, "d1": 0.0}
            for batch in val_loader:
                with torch.no_grad():
                    pred = model.module(batch["image"].to(device))
                metrics = compute_metrics(pred, batch["depth"].to(device))
                for k in totals:
                    totals[k] += metrics[k].item()  # expect: TPU110, TPU101
            print({k: v / len(val_loader) for k, v in totals.items()})  # ok
            torch.save(model.module.state_dict(), f"dpt_nyu_{epoch}.pt")  # expect: TPU110
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

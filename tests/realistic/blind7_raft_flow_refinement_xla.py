"""RAFT-small optical flow on FlyingChairs: all-pairs correlation pyramid, 12 iterations of GRU
refinement with convex upsampling, sequence loss; the upstream training script (CUDA AMP) with
the device lines changed for a TPU v3-8 under torch_xla."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader

from raft_core import BasicEncoder, SmallUpdateBlock
from raft_data import FlyingChairs, Sintel

MAX_FLOW = 400


def coords_grid(batch, ht, wd, device):
    ys, xs = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device), indexing="ij")
    return torch.stack([xs, ys], 0).float()[None].repeat(batch, 1, 1, 1)  # ok


def bilinear_sampler(img, coords):
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    grid = torch.cat([2 * xgrid / (W - 1) - 1, 2 * ygrid / (H - 1) - 1], dim=-1)
    return F.grid_sample(img, grid, align_corners=True)  # expect: TPU201


class CorrPyramid:
    def __init__(self, f1, f2, levels=4, radius=3):
        B, D, H, W = f1.shape
        corr = torch.einsum("bdn,bdm->bnm", f1.flatten(2), f2.flatten(2)) / D**0.5
        corr = corr.reshape(B * H * W, 1, H, W)
        self.pyramid, self.radius = [corr], radius
        for _ in range(levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        B, _, H, W = coords.shape
        coords = coords.permute(0, 2, 3, 1)
        d = torch.linspace(-r, r, 2 * r + 1)  # expect: TPU405
        delta = torch.stack(torch.meshgrid(d, d, indexing="ij"), -1).view(1, 2 * r + 1, 2 * r + 1, 2)
        out = []
        for i, corr in enumerate(self.pyramid):
            centroid = coords.reshape(B * H * W, 1, 1, 2) / 2**i
            out.append(bilinear_sampler(corr, centroid + delta).view(B, H, W, -1))
        return torch.cat(out, -1).permute(0, 3, 1, 2).float()


class RAFTSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.fnet = BasicEncoder(output_dim=128, norm_fn="instance")
        self.cnet = BasicEncoder(output_dim=160, norm_fn="none")
        self.update = SmallUpdateBlock(hidden_dim=96)

    def forward(self, img1, img2, iters=12):
        f1, f2 = self.fnet(torch.cat([img1, img2])).chunk(2)
        corr_fn = CorrPyramid(f1.float(), f2.float())
        net, inp = self.cnet(img1).split([96, 64], 1)
        net, inp = net.tanh(), inp.relu()
        B, _, H, W = f1.shape
        coords0 = coords_grid(B, H, W, img1.device)
        coords1 = coords0.clone()
        preds = []
        for _ in range(iters):
            coords1 = coords1.detach()
            net, delta = self.update(net, inp, corr_fn(coords1), coords1 - coords0)
            coords1 = coords1 + delta
            preds.append(F.interpolate(8 * (coords1 - coords0), scale_factor=8, mode="bilinear", align_corners=True))  # ok
        return preds


def sequence_loss(preds, gt, valid, gamma=0.8):
    mag = gt.pow(2).sum(1).sqrt()
    valid = (valid >= 0.5) & (mag < MAX_FLOW)
    loss = 0.0
    for i, pred in enumerate(preds):
        weight = gamma ** (len(preds) - i - 1)
        loss = loss + weight * (valid[:, None] * (pred - gt).abs()).mean()  # ok
    epe = (preds[-1] - gt).pow(2).sum(1).sqrt().view(-1)[valid.view(-1)]  # expect: TPU302
    return loss, {"epe": epe.mean().item(), "1px": (epe < 1).float().mean().item()}  # expect: TPU101


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--mixed_precision", action="store_true")
    args = ap.parse_args()
    device = torch_xla.device()
    model = RAFTSmall().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=1e-4, eps=1e-8)
    scaler = GradScaler(enabled=args.mixed_precision)  # expect: TPU505
    loader = DataLoader(FlyingChairs(crop=(368, 496)), batch_size=10, shuffle=True, num_workers=4, drop_last=True)  # ok
    step = 0
    while step < args.steps:
        for img1, img2, flow, valid in pl.MpDeviceLoader(loader, device):
            with autocast(enabled=args.mixed_precision):  # expect: TPU504
                preds = model(img1, img2)
            loss, metrics = sequence_loss(preds, flow, valid)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            step += 1
            if step % 100 == 0:
                xm.master_print(f"step {step} {metrics}")  # ok
    val = Sintel("clean", split="training")
    img1, img2 = val[0][0][None].to(device), val[0][1][None].to(device)
    img1 = F.interpolate(img1, size=(440, 1024), mode="bicubic", align_corners=False)  # expect: TPU202
    img2 = F.interpolate(img2, size=(440, 1024), mode="bicubic", align_corners=False)  # expect: TPU202
    xm.master_print(model(img1, img2, iters=32)[-1].abs().mean().item())  # ok


if __name__ == "__main__":
    main()

"""Real-ESRGAN-style x4 super-resolution fine-tuning: an RRDB generator, a U-Net discriminator
with spectral norm, L1 + VGG perceptual + relativistic GAN losses; degradations (blur, bicubic
downsampling, JPEG) are synthesised on the host in the dataset. A v4-8 job with torch_xla
(PJRT, torch_xla.launch, one process per chip)."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
import torchvision
from torch.nn.utils import spectral_norm
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision.io import read_image

from esrgan_blocks import RRDB, add_jpeg_noise, random_crop


class DegradedPairs(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        hr = random_crop(read_image(self.paths[i]).float() / 255, 256)
        lr = F.interpolate(hr[None], scale_factor=0.25, mode="bicubic", antialias=True)[0]  # ok (host, in the dataset)
        return {"lr": add_jpeg_noise(lr, quality=random.randint(30, 95)), "hr": hr}


class RRDBNet(nn.Module):
    def __init__(self, nf=64, nb=23):
        super().__init__()
        self.conv_first = nn.Conv2d(3, nf, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(nf) for _ in range(nb)])
        self.conv_body = nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv_up1, self.conv_up2 = nn.Conv2d(nf, nf, 3, 1, 1), nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv_hr, self.conv_last = nn.Conv2d(nf, nf, 3, 1, 1), nn.Conv2d(nf, 3, 3, 1, 1)

    def forward(self, x):
        fea = self.conv_first(x)
        fea = fea + self.conv_body(self.body(fea))
        fea = F.leaky_relu(self.conv_up1(F.interpolate(fea, scale_factor=2, mode="nearest")), 0.2)  # ok
        fea = F.leaky_relu(self.conv_up2(F.interpolate(fea, scale_factor=2, mode="nearest")), 0.2)  # ok
        out = self.conv_last(F.leaky_relu(self.conv_hr(fea), 0.2))
        return out + F.interpolate(x, scale_factor=4, mode="bicubic", align_corners=False)  # expect: TPU202


class UNetDiscriminatorSN(nn.Module):
    def __init__(self, nf=64):
        super().__init__()
        self.conv0 = nn.Conv2d(3, nf, 3, 1, 1)
        self.down = nn.ModuleList([spectral_norm(nn.Conv2d(nf * 2**i, nf * 2 ** (i + 1), 4, 2, 1, bias=False)) for i in range(3)])  # ok
        self.up = nn.ModuleList([spectral_norm(nn.Conv2d(nf * 2 ** (3 - i), nf * 2 ** (2 - i), 3, 1, 1, bias=False)) for i in range(3)])  # ok
        self.out = nn.Conv2d(nf, 1, 3, 1, 1)

    def forward(self, x):
        skips, h = [], F.leaky_relu(self.conv0(x), 0.2)
        for conv in self.down:
            skips.append(h)
            h = F.leaky_relu(conv(h), 0.2)
        for conv, skip in zip(self.up, reversed(skips)):
            h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)  # ok
            h = F.leaky_relu(conv(h), 0.2) + skip
        return self.out(h)


class PerceptualLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.vgg = torchvision.models.vgg19(weights="IMAGENET1K_V1").features[:35].eval().requires_grad_(False)
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def forward(self, sr, hr):
        sr = (sr - self.mean) / self.std  # expect: TPU405
        hr = (hr - self.mean) / self.std  # expect: TPU405
        return F.l1_loss(self.vgg(sr), self.vgg(hr))


def _mp_fn(index):
    device = torch_xla.device()
    net_g, net_d = RRDBNet().to(device), UNetDiscriminatorSN().to(device)
    net_g.load_state_dict(torch.load("RealESRNet_x4plus.pth", map_location="cpu")["params_ema"])  # ok
    percep = PerceptualLoss().to(device)
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-4, betas=(0.9, 0.99))
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-4, betas=(0.9, 0.99))
    dataset = DegradedPairs(sorted(open("DF2K_HR.txt").read().split()))
    sampler = DistributedSampler(dataset, xr.world_size(), xr.global_ordinal(), shuffle=True)
    loader = DataLoader(dataset, batch_size=12, sampler=sampler, num_workers=8, drop_last=True)  # ok
    for it, batch in enumerate(pl.MpDeviceLoader(loader, device)):
        lr, hr = batch["lr"], batch["hr"]
        net_d.requires_grad_(False)
        sr = net_g(lr)
        real_pred, fake_pred = net_d(hr).detach(), net_d(sr)
        l_gan = F.binary_cross_entropy_with_logits(fake_pred - real_pred.mean(), torch.ones_like(fake_pred))  # ok
        l_g = F.l1_loss(sr, hr) + percep(sr, hr) + 0.1 * l_gan
        opt_g.zero_grad()
        l_g.backward()
        xm.optimizer_step(opt_g)

        net_d.requires_grad_(True)
        fake_d = net_d(sr.detach())
        real_d = net_d(hr)
        real_target = torch.ones(real_d.shape)  # expect: TPU405
        l_d = F.binary_cross_entropy_with_logits(real_d - fake_d.mean(), real_target) + F.binary_cross_entropy_with_logits(fake_d - real_d.mean(), torch.zeros_like(fake_d))  # ok
        opt_d.zero_grad()
        l_d.backward()
        xm.optimizer_step(opt_d)
        if it % 100 == 0:
            psnr = 10 * torch.log10(1.0 / F.mse_loss(sr.detach().clamp(0, 1), hr))
            xm.master_print(f"iter {it} l_g {l_g.item():.4f} l_d {l_d.item():.4f} psnr {psnr.item():.2f}")  # ok
        if it % 5000 == 0:
            xm.save(net_g.state_dict(), f"net_g_{it}.pth")  # ok
        if it == 400_000:
            break


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=())

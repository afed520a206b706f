"""Minimal NeRF (coarse + fine MLPs, hierarchical sampling) on the Blender lego scene, trained on
one TPU chip with torch_xla. Rays for all training images are precomputed on the host."""
import json
import math
import os

import imageio.v2 as imageio
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_RAYS, N_COARSE, N_FINE = 4096, 64, 128
NEAR, FAR = 2.0, 6.0


def load_blender(root, split="train"):
    with open(os.path.join(root, f"transforms_{split}.json")) as f:
        meta = json.load(f)
    imgs = np.stack([imageio.imread(os.path.join(root, fr["file_path"] + ".png")) for fr in meta["frames"]]).astype(np.float32) / 255.0
    poses = np.stack([np.array(fr["transform_matrix"]) for fr in meta["frames"]])
    focal = 0.5 * imgs.shape[2] / math.tan(0.5 * meta["camera_angle_x"])
    return imgs[..., :3] * imgs[..., 3:] + (1.0 - imgs[..., 3:]), poses, focal


def get_rays(h, w, focal, c2w):
    j, i = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")  # ok
    dirs = torch.stack([(i - w * 0.5) / focal, -(j - h * 0.5) / focal, -torch.ones_like(i)], -1)  # ok
    rays_d = (dirs[..., None, :] * c2w[:3, :3]).sum(-1)
    return c2w[:3, -1].expand(rays_d.shape), rays_d


class Embedder(nn.Module):
    def __init__(self, n_freqs):
        super().__init__()
        self.register_buffer("freqs", 2.0 ** torch.arange(n_freqs, dtype=torch.float32) * math.pi)  # ok

    def forward(self, x):
        xf = x[..., None] * self.freqs
        return torch.cat([x, torch.sin(xf).flatten(-2), torch.cos(xf).flatten(-2)], -1)


class NeRF(nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.pos, self.dir = Embedder(10), Embedder(4)
        self.trunk = nn.Sequential(nn.Linear(63, width), nn.ReLU(), *[m for _ in range(6) for m in (nn.Linear(width, width), nn.ReLU())])
        self.sigma = nn.Linear(width, 1)
        self.rgb = nn.Sequential(nn.Linear(width + 27, width // 2), nn.ReLU(), nn.Linear(width // 2, 3))

    def forward(self, pts, viewdirs):
        h = self.trunk(self.pos(pts))
        return torch.sigmoid(self.rgb(torch.cat([h, self.dir(viewdirs)], -1))), F.relu(self.sigma(h)).squeeze(-1)


def stratified_samples(rays_o, n):
    t = torch.linspace(0.0, 1.0, n)  # expect: TPU405
    z = (NEAR * (1.0 - t) + FAR * t).expand(rays_o.shape[0], n)
    mids = 0.5 * (z[:, 1:] + z[:, :-1])
    lower, upper = torch.cat([z[:, :1], mids], -1), torch.cat([mids, z[:, -1:]], -1)
    return lower + (upper - lower) * torch.rand(z.shape, device=rays_o.device)


def sample_pdf(bins, weights, n):
    pdf = (weights + 1e-5) / (weights + 1e-5).sum(-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[:, :1]), torch.cumsum(pdf, -1)], -1)  # ok
    u = torch.rand(cdf.shape[0], n, device=cdf.device)
    idx = torch.searchsorted(cdf, u, right=True)  # expect: TPU217
    below, above = (idx - 1).clamp(min=0), idx.clamp(max=cdf.shape[-1] - 1)
    cdf_g = torch.stack([cdf.gather(1, below), cdf.gather(1, above)], -1)
    bins_g = torch.stack([bins.gather(1, below), bins.gather(1, above)], -1)
    denom = torch.where(cdf_g[..., 1] - cdf_g[..., 0] < 1e-5, torch.ones_like(u), cdf_g[..., 1] - cdf_g[..., 0])  # ok
    return bins_g[..., 0] + (u - cdf_g[..., 0]) / denom * (bins_g[..., 1] - bins_g[..., 0])


def render(model, rays_o, rays_d, z):
    pts = rays_o[:, None] + rays_d[:, None] * z[..., None]
    rgb, sigma = model(pts, F.normalize(rays_d, dim=-1)[:, None].expand_as(pts))
    dists = torch.cat([z[:, 1:] - z[:, :-1], torch.full_like(z[:, :1], 1e10)], -1)  # ok
    alpha = 1.0 - torch.exp(-sigma * dists)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    weights = alpha * trans
    return (weights[..., None] * rgb).sum(1), weights


def main(root="data/nerf_synthetic/lego", iters=200_000):
    device = torch_xla.device()
    imgs, poses, focal = load_blender(root)
    h, w = imgs.shape[1:3]
    rays = [torch.stack(get_rays(h, w, focal, torch.from_numpy(p[:3, :4])), 0) for p in poses]  # expect: TPU502
    all_rays = torch.cat([r.reshape(2, -1, 3) for r in rays], 1)
    all_rgb = torch.from_numpy(imgs.reshape(-1, 3))  # ok
    coarse, fine = NeRF().to(device), NeRF().to(device)
    optimizer = torch.optim.Adam(list(coarse.parameters()) + list(fine.parameters()), lr=5e-4)

    for it in range(iters):
        sel = torch.randint(0, all_rgb.shape[0], (N_RAYS,))  # ok
        rays_o, rays_d = all_rays[0, sel].to(device), all_rays[1, sel].to(device)
        target = all_rgb[sel].to(device)
        z = stratified_samples(rays_o, N_COARSE)
        rgb_c, weights = render(coarse, rays_o, rays_d, z)
        z_fine = sample_pdf(0.5 * (z[:, 1:] + z[:, :-1]), weights[:, 1:-1].detach(), N_FINE)
        z_all, _ = torch.sort(torch.cat([z, z_fine], -1), -1)
        rgb_f, _ = render(fine, rays_o, rays_d, z_all)
        loss = F.mse_loss(rgb_c, target) + F.mse_loss(rgb_f, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        for g in optimizer.param_groups:
            g["lr"] = 5e-4 * 0.1 ** (it / 250_000)  # ok
        xm.mark_step()  # expect: TPU601
        if torch.isnan(loss):  # expect: TPU107
            raise RuntimeError(f"loss diverged at iteration {it}")
        if it % 1000 == 0:
            psnr = -10.0 * torch.log10(F.mse_loss(rgb_f, target))
            print(f"iter {it} loss {loss.item():.5f} psnr {psnr.item():.2f}")  # ok
    torch.save({"coarse": coarse.state_dict(), "fine": fine.state_dict()}, "lego.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

"""Masked-autoencoder (MAE) pretraining of a ViT-B/16 with pytorch/xla SPMD on a v4-32 slice:
random 75% masking by argsort of noise, batch sharded over a data axis with xs.mark_sharding."""
import os

import numpy as np
import timm
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/mae_hlo --xla_dump_hlo_as_text"  # expect: TPU612
xr.use_spmd()


def sincos_pos_embed(dim, grid):
    coords = np.stack(np.meshgrid(np.arange(grid, dtype=np.float32), np.arange(grid, dtype=np.float32)), 0)
    omega = 1.0 / 10000 ** (np.arange(dim // 4, dtype=np.float64) / (dim / 4.0))
    out = [np.concatenate([np.sin(np.outer(c.reshape(-1), omega)), np.cos(np.outer(c.reshape(-1), omega))], 1) for c in coords]
    return np.concatenate(out, axis=1)


class MAE(nn.Module):
    def __init__(self, mask_ratio=0.75, dec_dim=512):
        super().__init__()
        self.encoder = timm.create_model("vit_base_patch16_224", num_classes=0, global_pool="")
        self.mask_ratio = mask_ratio
        self.enc_to_dec = nn.Linear(768, dec_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_dim))  # ok
        self.decoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dec_dim, 16, 2048, batch_first=True), 8)
        self.pred = nn.Linear(dec_dim, 16 * 16 * 3)
        pos = torch.from_numpy(sincos_pos_embed(dec_dim, 14)).unsqueeze(0)  # expect: TPU502
        self.register_buffer("dec_pos", pos)

    def forward(self, imgs):
        x = self.encoder.patch_embed(imgs) + self.encoder.pos_embed[:, 1:]
        B, L, D = x.shape
        len_keep = int(L * (1 - self.mask_ratio))  # ok
        noise = torch.rand(B, L, device=x.device)  # ok
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]  # ok
        x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, D))
        x = self.encoder.norm(self.encoder.blocks(x))
        y = self.enc_to_dec(x)
        y = torch.cat([y, self.mask_token.expand(B, L - len_keep, -1)], dim=1)  # ok
        y = torch.gather(y, 1, ids_restore.unsqueeze(-1).expand(-1, -1, y.shape[-1])) + self.dec_pos
        mask = torch.ones(B, L)  # expect: TPU405
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, 1, ids_restore)
        return self.pred(self.decoder(y)), mask


def patchify(imgs, p=16):
    B, C, H, W = imgs.shape
    x = imgs.reshape(B, C, H // p, p, W // p, p)
    return torch.einsum("nchpwq->nhwpqc", x).reshape(B, (H // p) * (W // p), p * p * C)


def main(steps=100_000):
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices, 1), ("data",))  # expect: TPU705
    device = torch_xla.device()
    model = MAE().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1.5e-4, betas=(0.9, 0.95), weight_decay=0.05)
    tf = transforms.Compose([transforms.RandomResizedCrop(224, scale=(0.2, 1.0)), transforms.ToTensor()])
    loader = DataLoader(datasets.ImageFolder("/data/imagenet/train", tf), batch_size=4096, shuffle=True, drop_last=True, num_workers=32)  # ok
    step = 0
    while step < steps:
        for imgs, _ in loader:  # expect: TPU607
            imgs = imgs.to(device)
            xs.mark_sharding(imgs, mesh, (0, None, None, None))  # ok
            pred, mask = model(imgs)
            target = patchify(imgs)
            loss = ((pred - target) ** 2).mean(-1)
            loss = (loss * mask).sum() / mask.sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            torch_xla.sync()
            if step % 100 == 0:
                xm.master_print(f"step {step} loss {loss.item():.4f}")  # ok
            step += 1
    xm.save(model.state_dict(), "mae_vitb16.pt")  # ok


if __name__ == "__main__":
    main()

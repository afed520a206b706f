"""Masked-autoencoder (MAE) ViT-B/16 pretraining on ImageNet-1k, launched with torchrun on a
TorchTPU v5p host (one process per chip, DDP). Adapted from the official MAE repo's
main_pretrain.py / engine_pretrain.py; the GPU-specific launch code was only partly replaced."""
import argparse
import math
import os
import sys

import timm.optim.optim_factory as optim_factory
import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision.datasets as datasets
import torchvision.transforms as T
from timm.models.vision_transformer import Block, PatchEmbed
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


class MaskedAutoencoderViT(nn.Module):
    def __init__(self, img_size=224, patch=16, dim=768, depth=12, heads=12, dec_dim=512, dec_depth=8, mask_ratio=0.75):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch, 3, dim)
        n = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim), requires_grad=False)
        self.blocks = nn.ModuleList([Block(dim, heads, 4.0, qkv_bias=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.decoder_embed = nn.Linear(dim, dec_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_dim))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, n + 1, dec_dim), requires_grad=False)
        self.decoder_blocks = nn.ModuleList([Block(dec_dim, 16, 4.0, qkv_bias=True) for _ in range(dec_depth)])
        self.decoder_norm = nn.LayerNorm(dec_dim)
        self.decoder_pred = nn.Linear(dec_dim, patch * patch * 3)
        self.patch, self.mask_ratio = patch, mask_ratio

    def patchify(self, imgs):
        p, h = self.patch, imgs.shape[2] // self.patch
        x = imgs.reshape(imgs.shape[0], 3, h, p, h, p)
        return torch.einsum("nchpwq->nhwpqc", x).reshape(imgs.shape[0], h * h, p * p * 3)

    def random_masking(self, x):
        N, L, D = x.shape
        len_keep = int(L * (1 - self.mask_ratio))
        noise = torch.rand(N, L, device=x.device)  # ok
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))  # ok
        mask = torch.ones([N, L])  # expect: TPU405
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward(self, imgs):
        x = self.patch_embed(imgs) + self.pos_embed[:, 1:, :]
        x, mask, ids_restore = self.random_masking(x)
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.decoder_embed(self.norm(x))
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)
        x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))  # ok
        x = torch.cat([x[:, :1, :], x_], dim=1) + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        pred = self.decoder_pred(self.decoder_norm(x))[:, 1:, :]
        target = self.patchify(imgs)
        mean, var = target.mean(dim=-1, keepdim=True), target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1.0e-6) ** 0.5
        loss = ((pred - target) ** 2).mean(dim=-1)
        return (loss * mask).sum() / mask.sum(), pred, mask


def adjust_learning_rate(optimizer, epoch, args):
    if epoch < args.warmup_epochs:
        lr = args.lr * epoch / args.warmup_epochs
    else:
        lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - args.warmup_epochs) / (args.epochs - args.warmup_epochs)))
    for g in optimizer.param_groups:
        g["lr"] = lr


def main(args):
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend="nccl")  # expect: TPU701
    torch.cuda.set_device(local_rank)  # expect: TPU404
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")
    torch.manual_seed(args.seed + rank)

    tf = T.Compose([T.RandomResizedCrop(224, scale=(0.2, 1.0), interpolation=T.InterpolationMode.BICUBIC), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])  # ok (host-side PIL resize)
    dataset = datasets.ImageFolder(os.path.join(args.data_path, "train"), transform=tf)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(dataset, sampler=sampler, batch_size=args.batch_size, num_workers=10, pin_memory=True, drop_last=True)  # debatable (pinned memory on TorchTPU is undocumented)

    model = MaskedAutoencoderViT().to(device)
    model = DDP(model, device_ids=[local_rank])  # expect: TPU702
    param_groups = optim_factory.param_groups_weight_decay(model.module, 0.05)
    optimizer = torch.optim.AdamW(param_groups, lr=args.lr, betas=(0.9, 0.95))  # expect: TPU608

    def train_step(samples):
        with torch.autocast("tpu", dtype=torch.bfloat16):
            loss, _, _ = model(samples)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    train_step = torch.compile(train_step, backend="tpu", dynamic=False)  # ok

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        adjust_learning_rate(optimizer, epoch, args)
        for it, (samples, _) in enumerate(loader):
            samples = samples.to(device, non_blocking=True)
            loss = train_step(samples)
            loss_value = loss.item()  # expect: TPU101
            if not math.isfinite(loss_value):
                print(f"Loss is {loss_value}, stopping training")
                sys.exit(1)
            if rank == 0 and it % 20 == 0:
                print(f"epoch {epoch} it {it} loss {loss_value:.4f} lr {optimizer.param_groups[0]['lr']:.2e}")  # ok
        if rank == 0 and (epoch % 20 == 0 or epoch + 1 == args.epochs):
            ckpt = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
            torch.save(ckpt, os.path.join(args.output_dir, f"checkpoint-{epoch}.pth"))  # expect: TPU110
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data_path", required=True)
    p.add_argument("--output_dir", default="mae-out")
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=400)
    p.add_argument("--warmup_epochs", type=int, default=40)
    p.add_argument("--lr", type=float, default=1.5e-4)
    p.add_argument("--seed", type=int, default=0)
    main(p.parse_args())

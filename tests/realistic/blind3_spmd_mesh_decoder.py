"""A Llama-style decoder trained with torch_xla SPMD: 2-D mesh, sharded weights and inputs, one process per host."""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/hlo --xla_dump_hlo_as_text"  # expect: TPU612


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))  # ok
        self.eps = eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # ok


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.wqkv = nn.Linear(dim, 3 * dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.w1 = nn.Linear(dim, 4 * dim, bias=False)
        self.w2 = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.wqkv(self.norm1(x)).view(B, T, 3, self.heads, C // self.heads).unbind(2)
        pos = torch.arange(T, dtype=torch.float32)  # expect: TPU405
        inv = 1.0 / (10000 ** (torch.arange(0, C // self.heads, 2, device=x.device) / (C // self.heads)))  # ok
        ang = pos[:, None] * inv[None, :]
        cos, sin = ang.cos().repeat(1, 2)[None, :, None], ang.sin().repeat(1, 2)[None, :, None]
        rot = lambda t: torch.cat([-t[..., t.size(-1) // 2:], t[..., : t.size(-1) // 2]], dim=-1)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)  # ok
        x = x + self.wo(y.transpose(1, 2).reshape(B, T, C))
        return x + self.w2(F.silu(self.w1(self.norm2(x))))


class Decoder(nn.Module):
    def __init__(self, vocab=32000, dim=2048, heads=16, layers=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        h = self.embed(tokens)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def benchmark_forward(model, device, mesh, steps=10):
    tokens = torch.randint(0, 32000, (16, 1024), device=device)  # ok
    xs.mark_sharding(tokens, mesh, ("data", None))
    start = time.perf_counter()
    for _ in range(steps):
        model(tokens)
        torch_xla.sync()
    elapsed = time.perf_counter() - start  # expect: TPU111
    print(f"forward: {elapsed / steps * 1000:.1f} ms/step")  # ok


def train():
    xr.use_spmd()  # ok
    device = torch_xla.device()
    n = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(n), (n // 4, 4), ("data", "model"))  # ok
    debug_mesh = xs.Mesh(np.arange(8), (4, 4), ("data", "model"))  # expect: TPU705
    model = Decoder().to(device)
    for name, p in model.named_parameters():
        if p.dim() == 2:
            xs.mark_sharding(p, mesh, ("model", "data") if name.endswith(("wo.weight", "w2.weight")) else ("data", "model"))
    data = torch.randint(0, 32000, (8192, 1025))
    loader = DataLoader(TensorDataset(data), batch_size=64, shuffle=True, drop_last=True)  # ok
    device_loader = pl.MpDeviceLoader(loader, device, input_sharding=xs.ShardingSpec(mesh, ("data", None)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95))
    for step, (tokens,) in enumerate(device_loader):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()  # ok
        optimizer.zero_grad(set_to_none=True)
        if loss.item() > 20.0:  # expect: TPU101|TPU107
            print(f"diverged at step {step}")
            break
        if step % 100 == 0:
            xm.add_step_closure(lambda l=loss, s=step: print(f"step {s}: {l.item():.3f}"))  # ok
    benchmark_forward(model, device, mesh)
    del debug_mesh


if __name__ == "__main__":
    train()

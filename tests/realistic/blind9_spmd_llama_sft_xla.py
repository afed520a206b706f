"""Supervised fine-tuning of a small Llama-style decoder (RoPE with complex rotations, RMSNorm,
SwiGLU) with PyTorch/XLA SPMD on a v5p-16 slice: FSDP-style sharding over a 2-D mesh, batches
sharded along the data axis by MpDeviceLoader, packed sequences of 2048 tokens."""
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from torch.utils.data import DataLoader

from sft_data import PackedSFTDataset

os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/hlo --xla_dump_hlo_as_text"  # expect: TPU612
xr.use_spmd()


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(end).float()
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # debatable (built once on the host; the complex ops are in forward)


def apply_rotary(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))  # ok (lowered: TPU204's measured record)
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))  # ok (lowered: TPU204's measured record)
    freqs_cis = freqs_cis[None, : xq.shape[1], None, :]
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class Block(nn.Module):
    def __init__(self, dim, n_heads, hidden):
        super().__init__()
        self.n_heads, self.hd = n_heads, dim // n_heads
        self.wqkv, self.wo = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.w1, self.w2, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False), nn.Linear(dim, hidden, bias=False)
        self.n1, self.n2 = RMSNorm(dim), RMSNorm(dim)

    def forward(self, x, freqs_cis):
        B, L, D = x.shape
        q, k, v = self.wqkv(self.n1(x)).view(B, L, 3, self.n_heads, self.hd).unbind(2)
        q, k = apply_rotary(q, k, freqs_cis)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)  # ok
        x = x + self.wo(att.transpose(1, 2).reshape(B, L, D))
        return x + self.w2(F.silu(self.w1(self.n2(x))) * self.w3(self.n2(x)))


class Llama(nn.Module):
    def __init__(self, vocab=32000, dim=2048, n_layers=16, n_heads=16, hidden=5632, max_len=2048):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, n_heads, hidden) for _ in range(n_layers)])
        self.norm, self.head = RMSNorm(dim), nn.Linear(dim, vocab, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(dim // n_heads, max_len), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis)
        return self.head(self.norm(h))


def main():
    n = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(n), (n // 4, 4), ("fsdp", "tensor", "seq"))  # expect: TPU705
    device = torch_xla.device()
    model = Llama().to(device)
    for name, p in model.named_parameters():
        if p.ndim == 2:
            xs.mark_sharding(p, mesh, ("fsdp", None))  # ok
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.0)
    loader = DataLoader(PackedSFTDataset("sft.jsonl", seq_len=2048), batch_size=32, shuffle=True, drop_last=True)  # ok
    train_loader = pl.MpDeviceLoader(loader, device, input_sharding=xs.ShardingSpec(mesh, ("fsdp", None)))
    tokens_seen = 0
    for step, (tokens, labels) in enumerate(train_loader):
        t0 = time.perf_counter()
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), labels.view(-1), ignore_index=-100)  # ok
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        tokens_seen += (labels != -100).sum().item()  # expect: TPU101
        step_time = time.perf_counter() - t0  # ok (the .item() above waits for the device)
        if step % 10 == 0:
            print(f"step {step} tokens {tokens_seen} {step_time * 1e3:.0f} ms/step")  # ok
        if step > 0 and step % 1000 == 0:
            torch.save(model.state_dict(), f"ckpt/step{step}.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

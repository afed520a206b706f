# FSDP-style SPMD pretraining of a small GPT on a v5p-16 slice with torch_xla's SPMD API.
# Parameters sharded along a 1-D "fsdp" axis, activations annotated per block, one compiled step.
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, Dataset

xr.use_spmd()  # ok


class TokenShards(Dataset):
    def __init__(self, path, seq_len=2048):
        self.data = np.memmap(path, dtype=np.uint16, mode="r")
        self.seq_len = seq_len

    def __len__(self):
        return len(self.data) // (self.seq_len + 1)

    def __getitem__(self, i):
        chunk = self.data[i * (self.seq_len + 1):(i + 1) * (self.seq_len + 1)].astype(np.int64)
        return torch.from_numpy(chunk)  # ok


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)  # expect: TPU405
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.h)
        att = att.masked_fill(causal, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=50304, d=1024, h=16, n=24, seq_len=2048):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList([Block(d, h) for _ in range(n)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))  # ok
        for blk in self.blocks:
            x = blk(x)
            xs.mark_sharding(x, mesh, ("fsdp", None, None))  # ok
        return self.head(self.ln_f(x))


num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("fsdp",))  # ok

if __name__ == "__main__":
    device = torch_xla.device()
    model = GPT().to(device)
    for name, p in model.named_parameters():
        if p.dim() == 2:
            xs.mark_sharding(p, mesh, ("fsdp", None))  # ok
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    loader = DataLoader(TokenShards(os.environ["DATA"]), batch_size=64, shuffle=True, drop_last=True)  # ok
    device_loader = pl.MpDeviceLoader(loader, device, input_sharding=xs.ShardingSpec(mesh, ("fsdp", None)))

    def step_fn(batch):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1).float(), batch[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    step = torch_xla.compile(step_fn)
    for i, batch in enumerate(device_loader):
        loss = step(batch)
        if i % 100 == 0:
            print(f"step {i} loss {loss.item():.3f}")  # ok
        if i and i % 5000 == 0:
            torch.save(model.state_dict(), f"/ckpt/gpt_{i}.pt")  # expect: TPU408

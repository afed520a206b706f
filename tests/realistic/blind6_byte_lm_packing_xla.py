"""Tokenizer-free byte-level language model: UTF-8 bytes of a text corpus packed into fixed
2048-byte rows (documents separated by a 0 byte, attention kept within a document), trained
data-parallel on a v4-8 with xmp.spawn."""
import math
import os
import time

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, IterableDataset

SEQ = 2048


class PackedBytes(IterableDataset):
    def __init__(self, paths, rank, world):
        self.paths = paths[rank::world]

    def __iter__(self):
        buf = []
        for path in self.paths:
            with open(path, encoding="utf-8") as f:
                for doc in f.read().split("\n\n"):
                    buf.extend(doc.encode("utf-8"))
                    buf.append(0)
                    while len(buf) >= SEQ + 1:
                        yield torch.tensor(buf[:SEQ + 1], dtype=torch.long)  # ok
                        buf = buf[SEQ + 1:]


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class ByteLM(nn.Module):
    def __init__(self, dim=768, depth=12, heads=12):
        super().__init__()
        self.emb = nn.Embedding(256, dim)
        self.pos = nn.Embedding(SEQ, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.head = nn.Linear(dim, 256, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)), persistent=False)  # ok

    def forward(self, idx):
        t = idx.size(1)
        doc = (idx == 0).cumsum(-1)
        same_doc = doc[:, :, None] == doc[:, None, :]
        mask = (same_doc & self.causal[:t, :t])[:, None]  # ok
        h = self.emb(idx) + self.pos(torch.arange(t, device=idx.device))  # ok
        for blk in self.blocks:
            h = blk(h, mask)
        return self.head(h)


def log(step, loss, tokens_per_sec):
    xm.master_print(f"step {step} loss {loss.item():.4f} bpb {loss.item() / math.log(2):.4f} {tokens_per_sec:,.0f} bytes/s")  # ok


def _mp_fn(index, cfg):
    device = torch_xla.device()
    model = ByteLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.95), weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=cfg["lr"], total_steps=cfg["steps"], pct_start=0.02)
    data = PackedBytes(cfg["paths"], xr.global_ordinal(), xr.world_size())
    train_loader = DataLoader(data, batch_size=16, num_workers=2)  # expect: TPU306
    loader = pl.MpDeviceLoader(train_loader, device)

    t0 = time.perf_counter()
    for step, batch in enumerate(loader):
        x, y = batch[:, :-1], batch[:, 1:]
        loss = F.cross_entropy(model(x).view(-1, 256), y.reshape(-1))
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(grad_norm):  # expect: TPU108|TPU107
            optimizer.zero_grad(set_to_none=True)
            continue
        xm.optimizer_step(optimizer)
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 100 == 0:
            rate = 100 * 16 * SEQ * xr.world_size() / (time.perf_counter() - t0)  # ok (the isfinite check above waits for each backward)
            xm.add_step_closure(log, args=(step, loss, rate))  # ok
            t0 = time.perf_counter()
        if step == cfg["steps"]:
            break
    xm.save(model.state_dict(), cfg["out"])  # ok


if __name__ == "__main__":
    cfg = {"paths": sorted(os.listdir("corpus")), "lr": 6e-4, "steps": 100_000, "out": "bytelm.pt"}
    xmp.spawn(_mp_fn, args=(cfg,), nprocs=8)  # expect: TPU706

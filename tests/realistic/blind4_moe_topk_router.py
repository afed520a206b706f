"""A sparse mixture-of-experts feed-forward layer (top-2 routing, capacity limit, Switch-style
load-balancing loss) inside a small encoder, trained with torch_xla on one TPU host."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class Top2Router(nn.Module):
    def __init__(self, dim, num_experts, capacity_factor=1.25):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.num_experts = num_experts
        self.capacity_factor = capacity_factor

    def forward(self, x):
        logits = self.gate(x)
        probs = logits.softmax(-1)
        top_p, top_idx = probs.topk(2, dim=-1)  # ok
        top_p = top_p / top_p.sum(-1, keepdim=True)
        # Switch Transformer auxiliary loss: fraction routed x mean gate probability per expert.
        routed = F.one_hot(top_idx[:, 0], self.num_experts).float().mean(0)  # ok
        aux = self.num_experts * (routed * probs.mean(0)).sum()
        return top_p, top_idx, aux


class MoEFeedForward(nn.Module):
    def __init__(self, dim, hidden, num_experts=8):
        super().__init__()
        self.router = Top2Router(dim, num_experts)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)) for _ in range(num_experts)]
        )

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        top_p, top_idx, aux = self.router(x)
        capacity = math.ceil(self.router.capacity_factor * x.size(0) * 2 / len(self.experts))  # ok
        load = torch.bincount(top_idx.flatten(), minlength=len(self.experts))  # expect: TPU304
        out = torch.zeros_like(x)  # ok
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(top_idx == e)  # expect: TPU301
            token_idx = token_idx[:capacity]
            weight = top_p[token_idx, slot[:capacity]].unsqueeze(-1)
            out.index_add_(0, token_idx, weight * expert(x[token_idx]))  # ok
        return out.reshape(shape), aux, load


class Encoder(nn.Module):
    def __init__(self, vocab=32000, dim=512, layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn = nn.ModuleList([nn.MultiheadAttention(dim, 8, batch_first=True) for _ in range(layers)])
        self.moe = nn.ModuleList([MoEFeedForward(dim, 4 * dim) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        aux_total = 0.0
        for attn, moe in zip(self.attn, self.moe):
            h = h + attn(h, h, h, need_weights=False)[0]
            y, aux, load = moe(h)
            h = h + y
            aux_total = aux_total + aux
            if self.training and load.max() > 4 * load.float().mean():  # expect: TPU107
                print("router collapse: expert load", load)  # expect: TPU103
        return self.head(h), aux_total


def main():
    device = torch_xla.device()
    model = Encoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    tokens = torch.randint(0, 32000, (4096, 257))
    loader = DataLoader(TensorDataset(tokens), batch_size=32, shuffle=True, drop_last=True)  # ok
    device_loader = pl.MpDeviceLoader(loader, device)
    aux_weight = 0.01
    for step, (batch,) in enumerate(device_loader):
        logits, aux = model(batch[:, :-1])
        lm_loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        loss = lm_loss + aux_weight * aux
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
        xm.optimizer_step(optimizer)
        optimizer.zero_grad()
        history = {"lm": lm_loss.item(), "aux": aux.item()}  # expect: TPU101
        if step % 50 == 0:
            xm.master_print(f"step {step} lm {history['lm']:.3f} aux {history['aux']:.4f}")  # ok


if __name__ == "__main__":
    main()

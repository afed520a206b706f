"""SASRec next-item recommendation on MovieLens-1M: a causal self-attention model over each
user's last 200 items, binary cross-entropy on one positive and one sampled negative per
position, full-catalogue evaluation (HR@10, NDCG@10) with already-seen items filtered out.
TorchTPU on one chip; the training step is compiled with torch.compile(backend="tpu")."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from ml1m import LeaveOneOutEval, load_user_sequences


class SeqDataset(Dataset):
    def __init__(self, user_items, max_len=200):
        self.user_items, self.max_len = user_items, max_len

    def __len__(self):
        return len(self.user_items)

    def __getitem__(self, u):
        items = self.user_items[u][-(self.max_len + 1) :]
        seq = np.zeros(self.max_len, dtype=np.int64)
        pos = np.zeros(self.max_len, dtype=np.int64)
        seq[-(len(items) - 1) :], pos[-(len(items) - 1) :] = items[:-1], items[1:]
        return torch.from_numpy(seq), torch.from_numpy(pos)  # ok


class CausalSelfAttention(nn.Module):
    def __init__(self, d, dropout):
        super().__init__()
        self.qkv, self.proj, self.drop = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Dropout(dropout)

    def forward(self, x, pad):
        B, L, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        causal = torch.tril(torch.ones(L, L)).bool()  # expect: TPU405
        att = att.masked_fill(~causal, float("-inf")).masked_fill(pad[:, None, :], float("-inf"))
        return self.proj(self.drop(F.softmax(att, dim=-1).nan_to_num(0.0)) @ v)


class SASRec(nn.Module):
    def __init__(self, n_items, d=64, max_len=200, n_layers=2, dropout=0.2):
        super().__init__()
        self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.pos_emb = nn.Embedding(max_len, d)
        self.attn = nn.ModuleList([CausalSelfAttention(d, dropout) for _ in range(n_layers)])
        self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d)) for _ in range(n_layers)])
        self.ln = nn.LayerNorm(d)

    def forward(self, seq):
        positions = torch.arange(seq.size(1), device=seq.device)  # ok
        h = self.item_emb(seq) * math.sqrt(self.item_emb.embedding_dim) + self.pos_emb(positions)
        pad = seq == 0
        for attn, ffn in zip(self.attn, self.ffn):
            h = h + attn(h, pad)
            h = h + ffn(h)
        return self.ln(h)


def sample_negatives(pos, seq, n_items):
    neg = torch.randint(1, n_items + 1, pos.shape, device=pos.device)  # ok
    clash = torch.isin(neg, seq)  # expect: TPU217
    return torch.where(clash, torch.randint_like(neg, 1, n_items + 1), neg)  # ok


def main():
    device = torch.device("tpu")
    user_items, n_items = load_user_sequences("ml-1m/ratings.dat")
    model = SASRec(n_items).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))  # expect: TPU608
    train_loader = DataLoader(SeqDataset(user_items), batch_size=128, shuffle=True, num_workers=2)  # expect: TPU306

    @torch.compile(backend="tpu")  # expect: TPU604
    def train_step(seq, pos, neg):
        h = model(seq)
        pos_logits = (h * model.item_emb(pos)).sum(-1)
        neg_logits = (h * model.item_emb(neg)).sum(-1)
        is_target = pos != 0
        loss = F.binary_cross_entropy_with_logits(pos_logits[is_target], torch.ones_like(pos_logits[is_target]))  # expect: TPU302
        loss = loss + F.binary_cross_entropy_with_logits(neg_logits, torch.zeros_like(neg_logits), weight=is_target.float())  # ok
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    @torch.no_grad()
    def evaluate(eval_loader, k=10):
        model.eval()
        hits = torch.zeros((), device=device)
        ndcg = torch.zeros((), device=device)
        for seq, target, seen in eval_loader:
            seq, target, seen = seq.to(device), target.to(device), seen.to(device)
            scores = model(seq)[:, -1] @ model.item_emb.weight.T
            scores = scores.masked_fill(seen, -1e9)  # ok
            rank = (scores > scores.gather(1, target[:, None])).sum(1)  # ok
            hits += (rank < k).sum()  # ok
            ndcg += torch.where(rank < k, 1.0 / torch.log2(rank.float() + 2.0), 0.0).sum()  # ok
        model.train()
        n = len(eval_loader.dataset)
        return hits.item() / n, ndcg.item() / n  # ok

    eval_loader = DataLoader(LeaveOneOutEval(user_items, n_items), batch_size=256)  # ok
    for epoch in range(200):
        losses = []
        for seq, pos in train_loader:
            seq, pos = seq.to(device), pos.to(device)
            loss = train_step(seq, pos, sample_negatives(pos, seq, n_items))
            losses.append(loss.item())  # expect: TPU101
        print(f"epoch {epoch} loss {sum(losses) / len(losses):.4f}")  # ok
        if epoch % 20 == 0:
            hr, ndcg = evaluate(eval_loader)
            print(f"epoch {epoch} HR@10 {hr:.4f} NDCG@10 {ndcg:.4f}")  # ok


if __name__ == "__main__":
    main()

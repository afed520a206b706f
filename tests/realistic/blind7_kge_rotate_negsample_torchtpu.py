"""RotatE knowledge-graph embeddings on FB15k-237 with self-adversarial negative sampling and
filtered link-prediction evaluation (MRR, Hits@k). The original ran on one V100; this copy
targets a single TorchTPU chip with a compiled training step."""
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from kg_data import load_triples

device = torch.device("tpu")
GAMMA, EPS, NEG = 9.0, 2.0, 256


class RotatE(nn.Module):
    def __init__(self, n_ent, n_rel, dim=500):
        super().__init__()
        self.dim = dim
        self.emb_range = (GAMMA + EPS) / dim
        # Sparse gradients have no TPU path.
        self.ent = nn.Embedding(n_ent, 2 * dim, sparse=True)  # expect: TPUxxx
        self.rel = nn.Embedding(n_rel, dim)
        nn.init.uniform_(self.ent.weight, -self.emb_range, self.emb_range)
        nn.init.uniform_(self.rel.weight, -self.emb_range, self.emb_range)

    def score(self, head, rel, tail):
        re_h, im_h = head.chunk(2, dim=-1)
        re_t, im_t = tail.chunk(2, dim=-1)
        phase = rel / (self.emb_range / np.pi)
        r = torch.polar(torch.ones_like(phase), phase)  # expect: TPU204
        h = torch.complex(re_h, im_h)  # expect: TPU204
        diff = h * r - torch.complex(re_t, im_t)  # expect: TPU204
        return GAMMA - diff.abs().sum(-1)

    def forward(self, pos, neg):
        h, r, t = self.ent(pos[:, 0]), self.rel(pos[:, 1]), self.ent(pos[:, 2])
        pos_score = self.score(h, r, t)
        neg_tail = self.ent(neg)
        neg_score = self.score(h.unsqueeze(1), r.unsqueeze(1), neg_tail)
        return pos_score, neg_score


def corrupt(pos, n_ent):
    return torch.randint(0, n_ent, (pos.size(0), NEG))


model = RotatE(n_ent=14541, n_rel=237).to(device)
opt = torch.optim.Adam(model.parameters(), lr=5e-5, capturable=True)  # ok


@torch.compile(backend="tpu", dynamic=False)  # ok
def train_step(pos, neg, alpha=1.0):
    pos_score, neg_score = model(pos, neg)
    weights = F.softmax(neg_score * alpha, dim=-1).detach()
    neg_loss = -(weights * F.logsigmoid(-neg_score)).sum(-1)
    pos_loss = -F.logsigmoid(pos_score)
    loss = (pos_loss + neg_loss).mean() / 2
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


@torch.no_grad()
def filtered_ranks(test, known, batch=64):
    ranks = []
    all_ent = model.ent.weight
    for i in range(0, test.size(0), batch):
        rows = test[i : i + batch]
        triples = rows.to(device)
        h, r = model.ent(triples[:, 0]), model.rel(triples[:, 1])
        scores = model.score(h.unsqueeze(1), r.unsqueeze(1), all_ent.unsqueeze(0))
        target = scores.gather(1, triples[:, 2:3])
        filt = known[rows[:, 0], rows[:, 1]].to_dense().to(device)  # ok (a host lookup moved once per batch)
        scores[filt & (scores < target)] = -1e9  # expect: TPU302
        scores = scores.masked_fill(filt.bool(), float("-inf"))  # ok
        ranks.append(1 + (scores > target).sum(1))  # ok
    return torch.cat(ranks).float()


def main():
    train, test, known = load_triples("FB15k-237")
    loader = DataLoader(TensorDataset(train), batch_size=1024, shuffle=True, drop_last=True)  # ok
    for epoch in range(200):
        total = torch.zeros((), device=device)
        for (pos,) in loader:
            neg = corrupt(pos, model.ent.num_embeddings)  # ok (drawn on the host with the batch)
            total += train_step(pos.to(device), neg.to(device))
        print(f"epoch {epoch} loss {total.item() / len(loader):.4f}")  # ok
        if (epoch + 1) % 25 == 0:
            ranks = filtered_ranks(test, known)
            mrr = (1.0 / ranks).mean().item()  # ok
            hits = {k: (ranks <= k).float().mean().item() for k in (1, 3, 10)}  # ok
            print(json.dumps({"epoch": epoch, "mrr": mrr, **hits}))


if __name__ == "__main__":
    main()

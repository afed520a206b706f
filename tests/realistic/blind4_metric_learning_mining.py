"""Deep metric learning on Stanford Online Products: batch-hard triplet loss with semi-hard
negative mining, an m-per-class sampler, and Recall@K retrieval evaluation; torch_xla on one chip."""
import collections
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Sampler

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class MPerClassSampler(Sampler):
    def __init__(self, labels, m=4, batch_size=128):
        self.by_class = collections.defaultdict(list)
        for i, y in enumerate(labels):
            self.by_class[y].append(i)
        self.m, self.batch_size = m, batch_size

    def __iter__(self):
        classes = list(self.by_class)
        random.shuffle(classes)
        for c in classes:
            yield from random.choices(self.by_class[c], k=self.m)

    def __len__(self):
        return len(self.by_class) * self.m


class Embedder(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        backbone = torchvision.models.resnet50(weights="IMAGENET1K_V2")
        backbone.fc = nn.Identity()
        self.backbone, self.proj = backbone, nn.Linear(2048, dim)

    def forward(self, x):
        return F.normalize(self.proj(self.backbone(x)), dim=-1)


def semi_hard_triplet_loss(emb, labels, margin=0.2):
    dist = torch.cdist(emb, emb)  # ok
    same = labels[:, None] == labels[None, :]
    not_self = ~torch.eye(labels.size(0), dtype=torch.bool)  # expect: TPU405
    pos_mask = same & not_self
    hardest_pos = (dist * pos_mask).max(dim=1).values  # ok
    semi_hard = (~same) & (dist > hardest_pos[:, None])
    neg_dist = torch.where(semi_hard, dist, torch.full_like(dist, float("inf"))).min(dim=1).values  # ok
    fallback = dist.masked_fill(same, -1.0).max(dim=1).values  # ok
    neg_dist = torch.where(torch.isinf(neg_dist), fallback, neg_dist)
    triplets = F.relu(hardest_pos - neg_dist + margin)
    active = triplets[triplets > 0]  # expect: TPU302
    return active.mean() if active.numel() > 0 else triplets.sum() * 0.0  # expect: TPUxxx


@torch.no_grad()
def recall_at_k(model, loader, device, ks=(1, 10, 100)):
    model.eval()
    embs, labels = [], []
    for images, y in loader:  # ok (the caller passes an MpDeviceLoader)
        embs.append(model(images.to(device)))
        labels.append(y.to(device))
    embs, labels = torch.cat(embs), torch.cat(labels)
    sim = embs @ embs.T
    sim.fill_diagonal_(-2.0)
    nn_idx = sim.topk(max(ks), dim=1).indices  # ok
    hits = labels[nn_idx] == labels[:, None]
    model.train()
    return {k: hits[:, :k].any(dim=1).float().mean().item() for k in ks}  # ok


def main(train_set, test_set, epochs=60):
    device = torch_xla.device()
    model = Embedder().to(device)
    optimizer = torch.optim.Adam([
        {"params": model.backbone.parameters(), "lr": 1e-5},
        {"params": model.proj.parameters(), "lr": 1e-4},
    ])
    sampler = MPerClassSampler(train_set.targets, m=4)
    train_loader = DataLoader(train_set, batch_size=128, sampler=sampler, num_workers=8)  # expect: TPU306
    test_loader = DataLoader(test_set, batch_size=256, num_workers=8)  # ok
    for epoch in range(epochs):
        for step, (images, labels) in enumerate(pl.MpDeviceLoader(train_loader, device)):
            loss = semi_hard_triplet_loss(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")  # ok
        print(epoch, recall_at_k(model, pl.MpDeviceLoader(test_loader, device), device))  # ok

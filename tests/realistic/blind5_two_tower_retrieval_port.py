"""Two-tower retrieval model (query tower over user history, item tower over item features) with
in-batch sampled softmax and Recall@K evaluation; a CUDA training script moved to a TPU VM."""
import random

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import torch_xla
import torch_xla.core.xla_model as xm

SEED = 17
random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)
torch.cuda.manual_seed_all(SEED)  # expect: TPU404
torch.backends.cudnn.deterministic = True  # expect: TPU411


class Interactions(Dataset):
    def __init__(self, frame, history_len=50):
        self.users = frame["user_idx"].to_numpy()
        self.items = frame["item_idx"].to_numpy()
        self.history = np.stack(frame["history"].to_numpy())[:, :history_len]

    def __len__(self):
        return len(self.users)

    def __getitem__(self, i):
        return torch.from_numpy(self.history[i]), int(self.items[i])  # ok


class QueryTower(nn.Module):
    def __init__(self, n_items, dim=128):
        super().__init__()
        self.history = nn.EmbeddingBag(n_items + 1, dim, mode="mean", padding_idx=0)  # expect: TPU209
        self.mlp = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, history):
        return F.normalize(self.mlp(self.history(history)), dim=-1)


class ItemTower(nn.Module):
    def __init__(self, n_items, dim=128):
        super().__init__()
        self.embed = nn.Embedding(n_items + 1, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, items):
        return F.normalize(self.mlp(self.embed(items)), dim=-1)


def in_batch_loss(q, v, items, temperature=0.05):
    logits = q @ v.T / temperature
    same_item = items.unsqueeze(0) == items.unsqueeze(1)
    accidental = same_item & ~torch.eye(len(items), dtype=torch.bool)  # expect: TPU405
    logits = logits.masked_fill(accidental, float("-inf"))  # ok
    targets = torch.arange(len(items))  # expect: TPU405
    return F.cross_entropy(logits, targets)


def main(epochs=5):
    device = torch_xla.device()
    frame = pd.read_parquet("interactions.parquet")
    n_items = int(frame["item_idx"].max())  # ok
    train = Interactions(frame[frame["split"] == "train"])  # ok
    loader = DataLoader(train, batch_size=1024, shuffle=True, num_workers=8, pin_memory=True)  # expect: TPU306, TPU410
    query, item = QueryTower(n_items).to(device), ItemTower(n_items).to(device)
    optimizer = torch.optim.Adam(list(query.parameters()) + list(item.parameters()), lr=1e-3)
    for epoch in range(epochs):
        for history, items in loader:  # expect: TPU607, TPU605
            history, items = history.to(device), items.to(device)
            loss = in_batch_loss(query(history), item(items), items)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}")  # ok

    # Recall@100 over the whole catalogue, one query batch at a time.
    query.eval()
    item.eval()
    with torch.no_grad():
        catalogue = item(torch.arange(1, n_items + 1, device=device))  # ok
        test = Interactions(frame[frame["split"] == "test"])
        hits, total = torch.zeros((), device=device), 0
        for history, items in DataLoader(test, batch_size=2048):  # expect: TPU607
            scores = query(history.to(device)) @ catalogue.T
            top = scores.topk(100, dim=-1).indices + 1  # ok
            hits += (top == items.to(device).unsqueeze(1)).any(1).sum()
            total += len(items)  # ok
            xm.mark_step()  # expect: TPU601
        print(f"recall@100 = {hits.item() / total:.4f}")  # ok
    torch.save({"query": query.state_dict(), "item": item.state_dict()}, "two_tower.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

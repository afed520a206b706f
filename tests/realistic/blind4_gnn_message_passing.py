"""Graph classification with a message-passing GNN (GIN-style layers, mean aggregation, global
pooling) on molecule graphs of varying size; ported to a TPU with torch_xla from a GPU script."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import torch_xla
import torch_xla.core.xla_model as xm


class MoleculeDataset(Dataset):
    def __init__(self, graphs):
        self.graphs = graphs  # list of (node_features [n, 32], edge_index [2, e], label)

    def __len__(self):
        return len(self.graphs)

    def __getitem__(self, i):
        x, edge_index, y = self.graphs[i]
        return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(edge_index), torch.tensor(y)  # ok


def collate_graphs(samples):
    xs, edges, batch, ys = [], [], [], []
    offset = 0
    for g, (x, edge_index, y) in enumerate(samples):
        xs.append(x)
        edges.append(edge_index + offset)  # ok
        batch.append(torch.full((x.size(0),), g, dtype=torch.long))  # ok
        ys.append(y)
        offset += x.size(0)
    return torch.cat(xs), torch.cat(edges, dim=1), torch.cat(batch), torch.stack(ys)  # expect: TPUxxx


class MeanConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, h, edge_index):
        src, dst = edge_index
        msg = h[src]
        agg = torch.zeros_like(h).scatter_reduce(0, dst[:, None].expand_as(msg), msg, reduce="mean", include_self=False)  # expect: TPU211
        return self.mlp(torch.cat([h, agg], dim=-1))


class GIN(nn.Module):
    def __init__(self, in_dim=32, dim=128, layers=4, classes=2):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.convs = nn.ModuleList([MeanConv(dim) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.BatchNorm1d(dim) for _ in range(layers)])
        self.out = nn.Linear(dim, classes)

    def forward(self, x, edge_index, batch):
        h = self.inp(x)
        for conv, norm in zip(self.convs, self.norms):
            h = F.relu(norm(conv(h, edge_index))) + h
        num_graphs = int(batch.max()) + 1  # expect: TPU106
        pooled = torch.zeros(num_graphs, h.size(1), device=h.device).index_add_(0, batch, h)  # ok
        counts = torch.zeros(num_graphs).index_add_(0, batch, torch.ones(batch.size(0)))  # expect: TPU405
        return self.out(pooled / counts.clamp(min=1)[:, None])


def train(args, graphs):
    device = xm.xla_device()  # expect: TPU602
    model = GIN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_loader = DataLoader(MoleculeDataset(graphs), batch_size=args.batch_size, shuffle=True, collate_fn=collate_graphs)  # expect: TPU306
    for epoch in range(args.epochs):
        model.train()
        correct = total = 0
        for x, edge_index, batch, y in train_loader:  # expect: TPU607
            x, edge_index, batch, y = x.to(device), edge_index.to(device), batch.to(device), y.to(device)
            logits = model(x, edge_index, batch)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            correct += (logits.argmax(-1) == y).sum()  # ok
            total += y.numel()
        xm.master_print(f"epoch {epoch}: train acc {correct.item() / total:.3f}")  # ok
    xm.save(model.state_dict(), args.out)  # ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--out", default="gin.pt")
    args = parser.parse_args()
    train(args, torch.load("molecules.pt", weights_only=False))  # debatable (a dataset file written by a CPU preprocessing script)

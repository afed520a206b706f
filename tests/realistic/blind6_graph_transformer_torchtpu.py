"""Graph transformer for molecular property regression (QM9-style targets) on TorchTPU.
Graphs of different sizes are batched by concatenating their nodes; attention runs over edges
only, with a scatter softmax per destination node."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

import torch_tpu  # noqa: F401


def collate_graphs(graphs):
    xs, edges, owner, ys = [], [], [], []
    offset = 0
    for gi, g in enumerate(graphs):
        n = g["x"].shape[0]
        xs.append(g["x"])
        edges.append(g["edge_index"] + offset)  # ok
        owner.append(torch.full((n,), gi, dtype=torch.long))  # ok
        ys.append(g["y"])
        offset += n
    return torch.cat(xs), torch.cat(edges, dim=1), torch.cat(owner), torch.stack(ys)  # expect: TPUxxx


def scatter_softmax(scores, index, num_nodes):
    expanded = index.unsqueeze(-1).expand_as(scores)
    init = torch.full((num_nodes, scores.size(1)), -1e9, device=scores.device, dtype=scores.dtype)  # ok
    row_max = init.scatter_reduce(0, expanded, scores, reduce="amax", include_self=False)  # debatable (a torch_xla fallback; TorchTPU lowering unknown)
    exp = (scores - row_max[index]).exp()
    denom = torch.zeros(num_nodes, scores.size(1), device=scores.device, dtype=exp.dtype).index_add_(0, index, exp)  # ok
    return exp / denom[index].clamp_min(1e-16)


class EdgeAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, h, edge_index):
        src, dst = edge_index
        q, k, v = self.qkv(self.norm(h)).chunk(3, dim=-1)
        scores = (q[dst] * k[src]).view(-1, self.heads, self.dh).sum(-1) / self.dh ** 0.5  # ok
        alpha = scatter_softmax(scores, dst, h.size(0))
        msg = (v[src].view(-1, self.heads, self.dh) * alpha.unsqueeze(-1)).flatten(1)
        agg = torch.zeros_like(h).index_add_(0, dst, msg)  # ok
        return h + self.out(agg)


class GraphRegressor(nn.Module):
    def __init__(self, in_dim, dim=256, layers=6, heads=8, targets=12):
        super().__init__()
        self.embed = nn.Linear(in_dim, dim)
        self.layers = nn.ModuleList(EdgeAttention(dim, heads) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, targets))

    def forward(self, x, edge_index, owner, num_graphs):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, edge_index)
        pooled = torch.zeros(num_graphs, h.size(1), device=h.device, dtype=h.dtype).index_add_(0, owner, h)  # ok
        counts = torch.bincount(owner, minlength=num_graphs).clamp_min(1)  # expect: TPU304
        return self.head(pooled / counts.unsqueeze(-1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="qm9.pt")
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()

    device = torch.device("tpu")
    graphs = torch.load(args.data, map_location="cpu")  # ok
    mean = torch.stack([g["y"] for g in graphs]).mean(0)  # ok
    std = torch.stack([g["y"] for g in graphs]).std(0)  # ok
    train_loader = DataLoader(graphs[:110000], batch_size=128, shuffle=True, collate_fn=collate_graphs, drop_last=True)  # ok
    val_loader = DataLoader(graphs[110000:], batch_size=256, collate_fn=collate_graphs)  # ok

    model = GraphRegressor(in_dim=graphs[0]["x"].shape[1]).to(device)
    compiled = torch.compile(model, backend="tpu")  # expect: TPU604
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-5)  # ok
    mean, std = mean.to(device), std.to(device)

    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for x, edge_index, owner, y in train_loader:
            x, edge_index, owner, y = x.to(device), edge_index.to(device), owner.to(device), y.to(device)
            pred = compiled(x, edge_index, owner, y.size(0))
            valid = ~torch.isnan(y).any(-1)
            loss = F.l1_loss(pred[valid], ((y - mean) / std)[valid])  # expect: TPU302
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            running += loss.item()  # expect: TPU101
        model.eval()
        err = torch.zeros(mean.shape[0], device=device)  # ok
        with torch.no_grad():
            for x, edge_index, owner, y in val_loader:
                pred = compiled(x.to(device), edge_index.to(device), owner.to(device), y.size(0))
                err += ((pred * std + mean) - y.to(device)).abs().sum(0)  # ok
        mae = (err / len(val_loader.dataset)).cpu()  # ok
        print(f"epoch {epoch} train {running / len(train_loader):.4f} val MAE {mae.mean():.4f}")  # ok


if __name__ == "__main__":
    main()

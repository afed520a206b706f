"""A DLRM-style recommendation model with multi-hot sparse features."""
import torch
import torch.nn as nn


class SparseArch(nn.Module):
    def __init__(self, table_sizes, dim=64):
        super().__init__()
        self.tables = nn.ModuleList([nn.EmbeddingBag(n, dim, mode="sum") for n in table_sizes])  # expect: TPU209
        self.dense_tables = nn.ModuleList([nn.Embedding(n, dim) for n in table_sizes])  # ok

    def forward(self, indices, offsets):
        return torch.stack([t(i, o) for t, i, o in zip(self.tables, indices, offsets)], dim=1)


class InteractionArch(nn.Module):
    def forward(self, dense, sparse):
        combined = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        interactions = torch.bmm(combined, combined.transpose(1, 2))
        rows, cols = torch.triu_indices(combined.size(1), combined.size(1), offset=1, device=combined.device)  # ok
        return torch.cat([dense, interactions[:, rows, cols]], dim=1)


class DLRM(nn.Module):
    def __init__(self, table_sizes, dense_in=13, dim=64):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense_in, 256), nn.ReLU(), nn.Linear(256, dim))
        self.sparse = SparseArch(table_sizes, dim)
        self.interaction = InteractionArch()
        n = len(table_sizes) + 1
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, dense, indices, offsets):
        return self.top(self.interaction(self.bottom(dense), self.sparse(indices, offsets))).squeeze(-1)


def session_features(item_ids, session_ids, num_items):
    # Per-batch feature engineering, run inside the training step on device tensors.
    counts = torch.bincount(item_ids, minlength=num_items)  # expect: TPU304
    lengths = torch.bincount(session_ids)  # expect: TPU304
    expanded = torch.repeat_interleave(torch.arange(lengths.numel(), device=item_ids.device), lengths)  # expect: TPU305
    pooled = torch.zeros(lengths.numel(), device=item_ids.device).index_reduce_(0, expanded, item_ids.float(), "amax")  # expect: TPU211
    return counts, pooled


def train_step(model, optimizer, batch, num_items):
    dense, indices, offsets, labels, item_ids, session_ids = batch
    counts, pooled = session_features(item_ids, session_ids, num_items)
    logits = model(dense, indices, offsets)
    loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

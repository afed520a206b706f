"""A DLRM-style click-through model (Criteo layout) ported from a GPU recipe to a TPU VM with torch_xla."""
import numpy as np
import torch
import torch.nn as nn
from sklearn.metrics import roc_auc_score
from torch.utils.data import DataLoader, Dataset

import torch_xla
import torch_xla.core.xla_model as xm

NUM_DENSE, NUM_SPARSE, HASH_ROWS, DIM, BAG = 13, 26, 1_000_000, 64, 4


class CriteoShard(Dataset):
    def __init__(self, path):
        self.dense = np.load(f"{path}/dense.npy", mmap_mode="r")
        self.sparse = np.load(f"{path}/sparse.npy", mmap_mode="r")  # int64 ids, BAG per feature
        self.labels = np.load(f"{path}/labels.npy", mmap_mode="r")

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        dense = torch.from_numpy(np.log1p(np.maximum(self.dense[i], 0)).astype(np.float32))  # ok
        sparse = torch.from_numpy(self.sparse[i] % HASH_ROWS)
        return dense, sparse, torch.tensor(self.labels[i], dtype=torch.float32)  # ok


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(NUM_DENSE, 512), nn.ReLU(), nn.Linear(512, DIM), nn.ReLU())
        self.tables = nn.ModuleList(nn.EmbeddingBag(HASH_ROWS, DIM, mode="sum") for _ in range(NUM_SPARSE))  # expect: TPU209
        n = NUM_SPARSE + 1
        self.top = nn.Sequential(nn.Linear(n * (n - 1) // 2 + DIM, 512), nn.ReLU(), nn.Linear(512, 1))

    def forward(self, dense, sparse):
        B = dense.size(0)
        x = self.bottom(dense)
        offsets = torch.arange(0, B * BAG, BAG)  # expect: TPU405
        embs = [table(sparse[:, f].reshape(-1), offsets) for f, table in enumerate(self.tables)]
        feats = torch.stack([x] + embs, dim=1)
        inter = torch.bmm(feats, feats.transpose(1, 2))
        li, lj = torch.tril_indices(feats.size(1), feats.size(1), offset=-1)  # expect: TPU405
        return self.top(torch.cat([x, inter[:, li, lj]], dim=1)).squeeze(1)


def train(model, loader, device, steps):
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))  # expect: TPU405
    dense_opt = torch.optim.Adagrad(list(model.bottom.parameters()) + list(model.top.parameters()), lr=0.01)
    sparse_opt = torch.optim.SGD(model.tables.parameters(), lr=0.05)
    model.train()
    for step, (dense, sparse, label) in enumerate(loader):  # expect: TPU607
        dense, sparse, label = dense.to(device), sparse.to(device), label.to(device)
        loss = criterion(model(dense, sparse), label)
        dense_opt.zero_grad()
        sparse_opt.zero_grad()
        loss.backward()
        dense_opt.step()
        sparse_opt.step()
        torch_xla.sync()
        if step % 1000 == 0:
            xm.master_print(f"step {step} loss {loss.item():.5f}")  # ok
        if step == steps:
            break


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    scores, labels = [], []
    for dense, sparse, label in loader:  # expect: TPU607
        scores.append(torch.sigmoid(model(dense.to(device), sparse.to(device))))
        labels.append(label)
        torch_xla.sync()
    preds = torch.cat(scores).cpu().numpy()  # ok
    return roc_auc_score(torch.cat(labels).numpy(), preds)  # ok


def main():
    device = torch_xla.device()
    model = DLRM().to(device)
    train_loader = DataLoader(CriteoShard("/data/criteo/day_0"), batch_size=2048, shuffle=True, num_workers=16, pin_memory=True)  # expect: TPU306, TPU410
    val_loader = DataLoader(CriteoShard("/data/criteo/day_23"), batch_size=8192, num_workers=16, drop_last=True)  # ok
    train(model, train_loader, device, steps=50_000)
    auc = evaluate(model, val_loader, device)
    print(f"validation AUC {auc:.4f}")
    xm.save(model.state_dict(), "/tmp/dlrm.pt")  # ok


if __name__ == "__main__":
    main()

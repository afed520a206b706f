"""TabTransformer for the Adult-income / bank-marketing style tabular tasks: categorical columns
through a shared embedding table with per-column offsets and a transformer, numeric columns
layer-normed and concatenated. Written for a GPU box; `--tpu` runs it on a Cloud TPU with
torch_xla (the port added the device line and the optimizer step, nothing else)."""
import argparse

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score
from torch.utils.data import DataLoader, Dataset


class TabularDataset(Dataset):
    def __init__(self, df, cat_cols, num_cols, target):
        self.cat = df[cat_cols].to_numpy(dtype=np.int64)
        self.num = df[num_cols].to_numpy(dtype=np.float32)
        self.y = df[target].to_numpy(dtype=np.float32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.cat[i]), torch.from_numpy(self.num[i]), torch.tensor(self.y[i])  # ok


class TabTransformer(nn.Module):
    def __init__(self, cardinalities, n_num, dim=32, depth=6, heads=8):
        super().__init__()
        self.offsets = torch.tensor(np.concatenate([[0], np.cumsum(cardinalities)[:-1]]))
        self.embed = nn.Embedding(sum(cardinalities), dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.num_norm = nn.LayerNorm(n_num)
        hidden = dim * len(cardinalities) + n_num
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.ReLU(), nn.Linear(4 * hidden, 1))

    def forward(self, x_cat, x_num):
        tokens = self.embed(x_cat + self.offsets)  # expect: TPU405
        ctx = self.encoder(tokens).flatten(1)
        return self.mlp(torch.cat([ctx, self.num_norm(x_num)], -1)).squeeze(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="bank.csv")
    ap.add_argument("--tpu", action="store_true")
    ap.add_argument("--epochs", type=int, default=30)
    args = ap.parse_args()
    if args.tpu:
        import torch_xla.core.xla_model as xm

        device = xm.xla_device()  # expect: TPU602
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # debatable (the non-TPU branch; without --tpu a TPU VM runs on the CPU)
    torch.backends.cudnn.deterministic = True  # expect: TPU411

    df = pd.read_csv(args.csv)
    cat_cols = [c for c in df.columns if df[c].dtype == object and c != "y"]
    num_cols = [c for c in df.columns if df[c].dtype != object]
    num_cols.remove("y")
    for c in cat_cols:
        df[c] = df[c].astype("category").cat.codes
    cards = [int(df[c].max()) + 1 for c in cat_cols]  # ok (pandas)
    train_df, val_df = df.sample(frac=0.8, random_state=0), None
    val_df = df.drop(train_df.index)
    train_loader = DataLoader(TabularDataset(train_df, cat_cols, num_cols, "y"), batch_size=256, shuffle=True)  # expect: TPU306
    val_loader = DataLoader(TabularDataset(val_df, cat_cols, num_cols, "y"), batch_size=1024)  # ok

    model = TabTransformer(cards, len(num_cols)).to(device)
    pos_weight = torch.tensor(len(train_df) / train_df["y"].sum() - 1.0)  # debatable (a 0-dim host tensor is accepted beside device tensors)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-5)
    for epoch in range(args.epochs):
        model.train()
        for x_cat, x_num, y in train_loader:  # expect: TPU607
            x_cat, x_num, y = x_cat.to(device), x_num.to(device), y.to(device)
            logits = model(x_cat, x_num)
            loss = F.binary_cross_entropy_with_logits(logits, y, pos_weight=pos_weight)
            opt.zero_grad()
            loss.backward()
            if args.tpu:
                xm.optimizer_step(opt, barrier=True)
            else:
                opt.step()
        model.eval()
        scores, labels = [], []
        with torch.no_grad():
            for x_cat, x_num, y in val_loader:  # expect: TPU607
                scores.append(torch.sigmoid(model(x_cat.to(device), x_num.to(device))).cpu())  # debatable (per-batch eval copy for scikit-learn)
                labels.append(y)
        auc = roc_auc_score(torch.cat(labels).numpy(), torch.cat(scores).numpy())  # ok
        print(f"epoch {epoch} train loss {loss.item():.4f} val AUC {auc:.4f}")  # ok
    torch.save(model.state_dict(), "tabtransformer.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

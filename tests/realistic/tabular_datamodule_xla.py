"""Data loading for a tabular model trained on PyTorch/XLA."""
import numpy as np
import pandas as pd
import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, Dataset


class TabularDataset(Dataset):
    def __init__(self, frame: pd.DataFrame, target: str):
        self.features = torch.tensor(frame.drop(columns=[target]).values, dtype=torch.float32)  # ok
        self.targets = torch.from_numpy(frame[target].values.astype(np.float32))  # ok
        self.raw = torch.from_numpy(frame.drop(columns=[target]).values)  # ok

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        x = self.features[i]
        if torch.isnan(x).any():  # ok
            x = torch.nan_to_num(x)
        return x, self.targets[i]


def make_loaders(train_frame, val_frame, target, batch_size=1024):
    device = torch_xla.device()
    train_ds = TabularDataset(train_frame, target)
    val_ds = TabularDataset(val_frame, target)
    train_loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=4, pin_memory=True)  # expect: TPU410
    val_loader = DataLoader(val_ds, batch_size=batch_size, shuffle=False, num_workers=2)  # ok
    return pl.MpDeviceLoader(train_loader, device), pl.MpDeviceLoader(val_loader, device)


def feature_statistics(frame):
    # Run once before training, on the host.
    values = torch.from_numpy(frame.values)  # ok
    return values.mean(0).numpy(), values.std(0).numpy()  # ok

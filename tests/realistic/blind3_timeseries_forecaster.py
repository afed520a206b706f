"""Multi-horizon load forecasting with a temporal conv net on rolling windows, trained on a TPU with torch_xla."""
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch_xla

CONTEXT, HORIZON = 168, 24


def load_series(path):
    df = pd.read_csv(path, parse_dates=["timestamp"]).set_index("timestamp")
    values = df[["load", "temperature", "humidity"]].interpolate().values
    mean, std = values.mean(0), values.std(0) + 1e-6
    series = torch.from_numpy((values - mean) / std)  # expect: TPU502
    return series, mean, std


def rolling_windows(series, stride=1):
    windows = series.unfold(0, CONTEXT + HORIZON, stride).permute(0, 2, 1)  # ok
    return windows[:, :CONTEXT], windows[:, CONTEXT:, 0]


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.conv = nn.utils.weight_norm(nn.Conv1d(cin, cout, 3, dilation=dilation))  # expect: TPU210
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return F.gelu(self.conv(F.pad(x, (self.pad, 0)))) + self.skip(x)


class Forecaster(nn.Module):
    def __init__(self, features=3, hidden=128):
        super().__init__()
        self.tcn = nn.Sequential(*[TemporalBlock(features if i == 0 else hidden, hidden, 2**i) for i in range(6)])
        self.season = nn.Linear(2 * (CONTEXT // 2 + 1), hidden)
        self.out = nn.Linear(2 * hidden, HORIZON)

    def forward(self, x):
        h = self.tcn(x.transpose(1, 2))[:, :, -1]
        spectrum = torch.fft.rfft(x[:, :, 0], dim=1)  # expect: TPU204
        s = self.season(torch.cat([spectrum.real, spectrum.imag], dim=1))
        return self.out(torch.cat([h, s], dim=1))


@torch.no_grad()
def rollout(model, context, steps):
    window, history = context.clone(), []
    for _ in range(steps // HORIZON):
        pred = model(window)
        history.append(pred)
        nxt = torch.cat([pred[:, :, None], window[:, -HORIZON:, 1:]], dim=2)
        window = torch.cat([window[:, HORIZON:], nxt], dim=1)  # ok
    return torch.cat(history, dim=1)


@torch.no_grad()
def rollout_growing(model, context, steps):
    seq = context.clone()
    for _ in range(steps // HORIZON):
        pred = model(seq[:, -CONTEXT:])
        nxt = torch.cat([pred[:, :, None], seq[:, -HORIZON:, 1:]], dim=2)
        seq = torch.cat([seq, nxt], dim=1)  # expect: TPU310
    return seq[:, context.size(1):, 0]


def main():
    device = torch_xla.device()
    series, mean, std = load_series("/data/load.csv")
    split = int(0.9 * len(series))
    x_train, y_train = rolling_windows(series[:split].float())
    x_val, y_val = rolling_windows(series[split:].float(), stride=HORIZON)
    train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=256, shuffle=True)  # expect: TPU306
    model = Forecaster().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x_val, y_val = x_val.to(device), y_val.to(device)
    best, losses = float("inf"), []
    for epoch in range(100):
        model.train()
        for x, y in train_loader:  # expect: TPU607
            x, y = x.to(device), y.to(device)
            loss = F.smooth_l1_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            losses.append(loss.item())  # expect: TPU101
        model.eval()
        with torch.no_grad():
            err = (model(x_val) - y_val).abs()
            val_mae, val_median = err.mean(), err.median()  # expect: TPU205
        if val_mae < best:  # ok
            best = val_mae
            torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "/tmp/forecaster.pt")  # ok
        print(f"epoch {epoch}: train {np.mean(losses[-100:]):.4f} val MAE {val_mae:.4f} median {val_median:.4f}")  # ok
    forecast = rollout(model, x_val[:1], 7 * 24).cpu().numpy() * std[0] + mean[0]  # ok
    long_range = rollout_growing(model, x_val[:1], 28 * 24).cpu().numpy() * std[0] + mean[0]  # ok
    np.save("/tmp/forecast.npy", np.concatenate([forecast.ravel(), long_range.ravel()]))


if __name__ == "__main__":
    main()

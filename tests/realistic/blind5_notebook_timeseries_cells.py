# %% [markdown]
# # Transformer forecaster on ETTh1 (Colab TPU runtime)
# Exported from a notebook: encoder-decoder trained Informer-style (known label window plus zero
# placeholders for the horizon), then a rolling autoregressive evaluation over the test split.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
CTX, HORIZON, LABEL = 96, 24, 48

# %%
df = pd.read_csv("ETTh1.csv")
values = df.drop(columns=["date"]).values.astype(np.float32)
train_end = int(len(values) * 0.7)
mean, std = values[:train_end].mean(0), values[:train_end].std(0)
norm = (values - mean) / std  # ok
windows = np.stack([norm[i:i + CTX + HORIZON] for i in range(len(norm) - CTX - HORIZON)])
X = torch.tensor(windows[:, :CTX])  # ok
Y = torch.tensor(windows[:, CTX:])  # ok
split = int(len(X) * 0.7)
train_loader = DataLoader(TensorDataset(X[:split], Y[:split]), batch_size=128, shuffle=True)  # expect: TPU306
test_x, test_y = X[split:], Y[split:]

# %%
class Forecaster(nn.Module):
    def __init__(self, n_vars=7, d=128):
        super().__init__()
        self.inp = nn.Linear(n_vars, d)
        self.pos = nn.Embedding(CTX + HORIZON, d)
        self.tf = nn.Transformer(d, 8, 3, 2, 256, batch_first=True)
        self.out = nn.Linear(d, n_vars)

    def forward(self, src, tgt):
        src_pos = torch.arange(src.size(1))  # expect: TPU405
        tgt_pos = torch.arange(src.size(1), src.size(1) + tgt.size(1), device=tgt.device)  # ok
        causal = self.tf.generate_square_subsequent_mask(tgt.size(1)).to(tgt.device)  # ok
        h = self.tf(self.inp(src) + self.pos(src_pos), self.inp(tgt) + self.pos(tgt_pos), tgt_mask=causal)
        return self.out(h)


model = Forecaster().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()

# %%
for epoch in range(20):
    losses = []
    for xb, yb in train_loader:  # expect: TPU607
        xb, yb = xb.to(device), yb.to(device)
        dec_in = torch.cat([xb[:, -LABEL:], torch.zeros(xb.size(0), HORIZON, xb.size(2))], 1)  # expect: TPU405
        pred = model(xb, dec_in)[:, -HORIZON:]
        loss = loss_fn(pred, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()  # expect: TPU601
        losses.append(loss.item())  # expect: TPU101
    print(epoch, np.mean(losses))  # ok

# %%
torch.save(model.state_dict(), "forecaster.pt")  # expect: TPU408
model.load_state_dict(torch.load("forecaster.pt"))  # expect: TPU406

# %% rolling autoregressive evaluation
model.eval()
with torch.no_grad():
    src = test_x[:256].to(device)
    dec = src[:, -LABEL:]
    for t in range(HORIZON):
        step_out = model(src, dec)[:, -1:]
        dec = torch.cat([dec, step_out], 1)  # expect: TPU310
    forecast = dec[:, LABEL:].cpu()  # ok
mse = ((forecast - test_y[:256]) ** 2).mean()
print("test MSE", mse.item(), "RMSE", math.sqrt(mse.item()))  # ok

# %%
plt.plot(test_y[0, :, -1].numpy(), label="truth")  # ok
plt.plot(forecast[0, :, -1].numpy(), label="forecast")  # ok
plt.legend()
plt.show()

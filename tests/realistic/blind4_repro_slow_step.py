# Repro for "training step gets slower every iteration on v4-8" (posted to a GitHub issue).
# torch 2.8 / torch_xla 2.8, PJRT_DEVICE=TPU. Run: python repro.py
import time

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

torch.set_default_dtype(torch.float64)  # expect: TPU501
dev = xm.xla_device()  # expect: TPU602

# features come from a numpy preprocessing step in the real code
feats = np.random.randn(4096, 300)
targets = np.random.randint(0, 10, size=4096)
X = torch.from_numpy(feats).to(dev)  # expect: TPU502
Y = torch.from_numpy(targets).to(dev)  # ok


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(300, 1000)
        self.fc2 = nn.Linear(1000, 10)
        self.register_buffer("class_prior", torch.ones(10) / 10)  # ok

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        keep = h.abs().sum(0) > 0
        h = h[:, keep]  # expect: TPU302
        return self.fc2.weight[:, keep] @ h.T + self.fc2.bias[:, None]  # expect: TPU302


model = Net().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()

for i in range(20):
    t0 = time.time()
    idx = torch.randint(0, 4096, (256,))  # expect: TPU407
    out = model(X[idx.to(dev)])
    loss = loss_fn(out.T, Y[idx.to(dev)])
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()  # expect: TPU601
    print(i, "loss", loss.item(), "time", time.time() - t0)  # expect: TPU101

# warm-up done above; now time 10 steps without printing
t0 = time.time()
for i in range(10):
    out = model(X[:256])
    loss = loss_fn(out.T, Y[:256])
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()  # expect: TPU601
print("10 steps:", time.time() - t0)  # expect: TPU111

print(met.short_metrics_report())  # ok
print("compiles:", met.metric_data("CompileTime")[0])  # ok
# also tried: xm.optimizer_step(opt) instead of opt.step(); xm.mark_step() -- same slowdown

"""Compiled training and inference on TorchTPU."""
import torch
import torch.nn as nn
import torch_tpu
from torch_tpu._internal import execution_mode as em  # expect: TPU610

device = torch.device("tpu")


class MLP(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


model = MLP().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)  # ok
compiled = torch.compile(model, backend="inductor", dynamic=False)  # expect: TPU603
fast = torch.compile(model, backend="tpu", dynamic=False)  # ok
auto = torch.compile(model, dynamic=False)  # ok


@torch.compile(backend="tpu", dynamic=False)
def train_step(x, y):
    with torch.tpu.precision(torch.tpu.Precision.HIGHEST):  # expect: TPU613
        loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


@torch.inference_mode()  # expect: TPU609
@torch.compile(backend="tpu", dynamic=False)
def predict(x):
    return model(x).argmax(-1)


@torch.no_grad()
@torch.compile(backend="tpu", dynamic=False)
def predict_ok(x):
    return model(x).argmax(-1)  # ok


def run(loader):
    em.eager_mode = em.EagerMode.DEFER_AND_FUSE
    for x, y in loader:
        loss = train_step(x.to(device), y.to(device))
    return loss.item()  # ok

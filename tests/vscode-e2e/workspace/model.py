"""A PyTorch/XLA training script with TPU problems, opened by the VS Code end-to-end tests."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(dataset, batch_size=128, pin_memory=True)


def train_step(model, batch, optimizer):
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    xm.mark_step()
    return loss.item()

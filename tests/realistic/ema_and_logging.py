"""Training loop helpers: EMA of weights, TensorBoard logging, gradient-norm monitoring (torch_xla)."""
import copy
import math

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.tensorboard import SummaryWriter


class EMA:
    def __init__(self, model, decay=0.9999):
        self.shadow = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for s, p in zip(self.shadow.parameters(), model.parameters()):
            s.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)  # ok


def train(model, loader, optimizer, scheduler, steps, log_every=100):
    device = torch_xla.device()
    writer = SummaryWriter("runs/exp")
    ema = EMA(model)
    running = torch.zeros((), device=device)  # ok
    for step, (x, y) in enumerate(pl.MpDeviceLoader(loader, device)):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if total_norm > 10.0:  # expect: TPU108
            print("large gradient")
        xm.optimizer_step(optimizer)
        optimizer.zero_grad()
        scheduler.step()
        ema.update(model)
        running += loss.detach()  # ok
        writer.add_scalar("train/loss", loss, step)  # expect: TPU104
        writer.add_scalar("train/lr", scheduler.get_last_lr()[0], step)  # ok
        if math.isnan(loss):  # expect: TPU106
            raise RuntimeError("loss is NaN")
        if step % log_every == 0:
            writer.add_scalar("train/running_loss", running.item() / log_every, step)  # ok
            running.zero_()
        if step >= steps:
            break
    writer.add_scalar("train/final_loss", loss.item(), steps)  # ok
    writer.close()
    return ema

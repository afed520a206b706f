"""ResNet-50 on an ImageFolder with torch_xla DDP: xmp.spawn, MpDeviceLoader, per-epoch checkpoints."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)  # ok
    total = 0
    with torch.no_grad():
        for images, target in loader:  # expect: TPU607
            images, target = images.to(device), target.to(device)
            correct += (model(images).argmax(dim=1) == target).sum()  # ok
            total += target.size(0)
    return correct.item() / max(total, 1)  # ok


def _mp_fn(index, flags):
    dist.init_process_group("xla", init_method="xla://")  # ok
    device = xm.xla_device()  # expect: TPU602
    world, rank = xr.world_size(), xr.global_ordinal()  # ok
    torch.manual_seed(flags["seed"])
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor()])
    train_set = torchvision.datasets.ImageFolder(os.path.join(flags["data"], "train"), tf)
    val_set = torchvision.datasets.ImageFolder(os.path.join(flags["data"], "val"), tf)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=flags["batch_size"], sampler=sampler, num_workers=8, pin_memory=True)  # expect: TPU306, TPU410
    device_loader = pl.MpDeviceLoader(train_loader, device)  # ok
    val_loader = DataLoader(val_set, batch_size=flags["batch_size"], num_workers=4)  # ok

    model = torchvision.models.resnet50().to(device)
    xm.broadcast_master_param(model)
    model = DDP(model, gradient_as_bucket_view=True)  # ok
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"] * world, momentum=0.9, weight_decay=1e-4)
    for epoch in range(flags["epochs"]):
        sampler.set_epoch(epoch)
        model.train()
        start = time.time()
        for step, (images, target) in enumerate(device_loader):
            optimizer.zero_grad()
            loss = criterion(model(images), target)
            loss.backward()
            optimizer.step()  # ok
            if step % flags["log_every"] == 0:
                xm.add_step_closure(lambda s=step, l=loss: print(f"step {s} loss {l.item():.3f}"))  # ok
        xm.mark_step()  # expect: TPU601
        epoch_time = time.time() - start  # expect: TPU111
        acc = evaluate(model, val_loader, device)
        if xm.get_ordinal() == 0:  # expect: TPU611
            print(f"epoch {epoch}: {epoch_time:.0f}s, val acc {acc:.4f}")
            torch.save(model.module.state_dict(), os.path.join(flags["out"], f"resnet50_e{epoch}.pt"))  # expect: TPU408
    xm.save(model.module.state_dict(), os.path.join(flags["out"], "resnet50_final.pt"))  # ok
    xm.wait_device_ops()


if __name__ == "__main__":
    flags = {"data": "/data/imagenet", "out": "/tmp/ckpt", "batch_size": 128, "lr": 0.1, "epochs": 90, "seed": 0, "log_every": 100}
    xmp.spawn(_mp_fn, args=(flags,), nprocs=8)  # expect: TPU706

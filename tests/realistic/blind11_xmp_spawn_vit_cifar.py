"""ViT-S/16 fine-tuning on CIFAR-100 with xmp.spawn on a v3-8 (torch_xla 2.x), written from the
old pytorch/xla example layout: per-process DataLoader with a DistributedSampler, MpDeviceLoader,
xm.optimizer_step, mixup, and a test loop that reduces accuracy across replicas."""
import time

import numpy as np
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms

FLAGS = dict(batch_size=128, epochs=10, lr=5e-4, mixup=0.8, log_steps=20, num_workers=4)


def mixup(x, y, alpha, num_classes=100):
    lam = float(np.random.beta(alpha, alpha))
    perm = torch.randperm(x.size(0))  # expect: TPU405
    y1 = F.one_hot(y, num_classes).float()
    return lam * x + (1 - lam) * x[perm], lam * y1 + (1 - lam) * y1[perm]


def train_vit(index, flags):
    torch.manual_seed(1)
    device = torch_xla.device()
    world = xm.xrt_world_size()  # expect: TPU611
    rank = xm.get_ordinal()  # expect: TPU611
    tf_train = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    tf_test = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
    train_set = datasets.CIFAR100("/tmp/cifar", train=True, download=rank == 0, transform=tf_train)
    test_set = datasets.CIFAR100("/tmp/cifar", train=False, download=rank == 0, transform=tf_test)
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=flags["batch_size"], sampler=train_sampler, num_workers=flags["num_workers"], drop_last=True)  # ok
    test_loader = DataLoader(test_set, batch_size=flags["batch_size"], sampler=DistributedSampler(test_set, num_replicas=world, rank=rank, shuffle=False), drop_last=False)  # ok

    model = timm.create_model("vit_small_patch16_224", pretrained=True, num_classes=100).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=flags["lr"] * world, weight_decay=0.05)
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)

    def train_loop_fn(epoch):
        model.train()
        tracker = xm.RateTracker()
        for step, (x, y) in enumerate(train_device_loader):
            x, soft = mixup(x, y, flags["mixup"])
            optimizer.zero_grad()
            loss = torch.sum(-soft * F.log_softmax(model(x), dim=-1), dim=-1).mean()
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(flags["batch_size"])
            if step % flags["log_steps"] == 0:
                xm.add_step_closure(lambda s=step, l=loss: print(f"[{rank}] ep {epoch} step {s} loss {l.item():.3f} rate {tracker.rate():.1f}"))  # ok

    def test_loop_fn():
        model.eval()
        correct, seen = 0, 0
        with torch.no_grad():
            for x, y in test_device_loader:
                pred = model(x).argmax(-1)
                correct += pred.eq(y).sum().item()  # expect: TPU101
                seen += y.size(0)
        acc = xm.mesh_reduce("acc", correct / max(seen, 1), np.mean)  # ok
        return acc

    for epoch in range(1, flags["epochs"] + 1):
        start = time.time()
        train_loop_fn(epoch)
        xm.master_print(f"epoch {epoch} train time {time.time() - start:.1f}s")  # expect: TPU111
        acc = test_loop_fn()
        xm.master_print(f"epoch {epoch} test acc {100 * acc:.2f}%")  # ok
        xm.save(model.state_dict(), f"/tmp/vit_cifar_{epoch}.pt")  # ok


if __name__ == "__main__":
    xmp.spawn(train_vit, args=(FLAGS,), nprocs=8, start_method="fork")  # expect: TPU706

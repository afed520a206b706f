"""ViT-S/16 classification trained with a compiled train step on TorchTPU (dynamic=False), with
stochastic depth and mixup; ported from a CUDA script and still carrying a few of its habits."""
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import timm
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

import torch_tpu  # noqa: F401

dist.init_process_group(backend="tpu_dist")  # ok
rank = dist.get_rank()
device = torch.device("tpu")
torch.manual_seed(0)
mixup_gen = torch.Generator(device="tpu").manual_seed(1234 + rank)

model = timm.create_model("vit_small_patch16_224", num_classes=1000, drop_path_rate=0.1).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)  # expect: TPU608
warmup, total = 10_000, 300_000
scheduler = torch.optim.lr_scheduler.LambdaLR(
    optimizer, lambda s: min(1.0, s / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total))  # ok
)


@torch.compile(backend="tpu", dynamic=False)  # ok
def train_step(images, targets):
    lam = torch.distributions.Beta(0.8, 0.8).sample().to(device)  # debatable (a host sample moved each step, inside the graph)
    perm = torch.randperm(images.size(0), device=device, generator=mixup_gen)  # expect: TPU613|TPU207
    images = lam * images + (1 - lam) * images[perm]
    with torch.tpu.precision(torch.tpu.Precision.HIGHEST):  # expect: TPU613
        logits = model(images)
    loss = lam * F.cross_entropy(logits, targets) + (1 - lam) * F.cross_entropy(logits, targets[perm])
    if torch.isnan(loss):  # expect: TPU107
        print(f"nan loss, lam={lam}")  # expect: TPU103|TPU104
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


eval_model = torch.compile(model, backend="tpu")  # expect: TPU604


def evaluate(loader):
    model.eval()
    correct = torch.zeros((), device=device)  # ok
    with torch.no_grad():
        for images, targets in loader:
            images, targets = images.to(device), targets.to(device)  # ok
            correct += (eval_model(images).argmax(-1) == targets).sum()
    model.train()
    return correct.item() / len(loader.dataset)  # ok


if __name__ == "__main__":
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    train_set = datasets.ImageFolder(os.environ.get("TRAIN_DIR", "/data/train"), tf)
    val_set = datasets.ImageFolder(os.environ.get("VAL_DIR", "/data/val"), transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()]))
    sampler = torch.utils.data.distributed.DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=256, sampler=sampler, num_workers=16, drop_last=True, pin_memory=True)  # ok
    val_loader = DataLoader(val_set, batch_size=250, num_workers=8)  # ok
    step, losses = 0, []
    for epoch in range(300):
        sampler.set_epoch(epoch)
        for images, targets in train_loader:
            images, targets = images.to(device, non_blocking=True), targets.to(device, non_blocking=True)  # ok
            loss = train_step(images, targets)
            scheduler.step()
            losses.append(loss.item())  # expect: TPU101
            step += 1
        acc = evaluate(val_loader)
        if rank == 0:
            print(f"epoch {epoch} loss {sum(losses) / len(losses):.4f} top1 {acc:.4f}")  # ok
            torch.save(model.state_dict(), f"vit_s16_{epoch}.pt")  # expect: TPU110
        losses.clear()

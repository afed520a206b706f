"""ImageNet ResNet training script, half-way through a port from CUDA to torch_xla."""
import argparse
import os
import random
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

import torch_xla
import torch_xla.core.xla_model as xm


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # ok
    torch.cuda.manual_seed_all(seed)  # expect: TPU404


def build_loaders(root, batch_size, workers):
    normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), normalize])
    val_tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), normalize])
    train_set = torchvision.datasets.ImageFolder(os.path.join(root, "train"), train_tf)
    val_set = torchvision.datasets.ImageFolder(os.path.join(root, "val"), val_tf)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True, drop_last=True)  # expect: TPU410
    val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, num_workers=workers, drop_last=True)  # ok
    return train_loader, val_loader


def train_one_epoch(model, criterion, optimizer, scaler, loader, device, epoch, print_freq):
    model.train()
    running_acc = 0.0
    loss_history = []
    end = time.time()
    for i, (images, targets) in enumerate(loader):  # expect: TPU605, TPU607
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.cuda.amp.autocast():  # expect: TPU504
            output = model(images)
            loss = criterion(output, targets)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        acc = (output.argmax(1) == targets).float().mean()
        running_acc += acc.item()  # expect: TPU101
        loss_history.append(loss.detach().cpu().numpy())  # expect: TPU102
        if i % print_freq == 0:
            torch.cuda.synchronize()  # expect: TPU404
            elapsed = time.time() - end
            print(f"Epoch [{epoch}][{i}/{len(loader)}] loss {loss.item():.4f} time {elapsed:.3f}")  # ok
            end = time.time()
    return running_acc / len(loader), float(np.mean(loss_history))


def validate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)  # ok
    seen = 0
    with torch.no_grad():
        for images, targets in loader:  # expect: TPU607
            images, targets = images.to(device), targets.to(device)
            output = model(images)
            correct += (output.argmax(1) == targets).sum()
            seen += targets.size(0)
            torch_xla.sync()
    return correct.item() / seen  # ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/data/imagenet")
    parser.add_argument("--arch", default="resnet50")
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--print-freq", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--resume", default="")
    parser.add_argument("--distributed", action="store_true")
    args = parser.parse_args()

    set_seed(args.seed)
    torch.backends.cudnn.deterministic = True  # expect: TPU411
    if args.distributed:
        dist.init_process_group("nccl")  # expect: TPU701
    device = xm.xla_device()  # expect: TPU602
    model = torchvision.models.__dict__[args.arch]().to(device)  # ok
    criterion = nn.CrossEntropyLoss().cuda()  # expect: TPU403
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    start_epoch = 0
    if args.resume:
        checkpoint = torch.load(args.resume)  # expect: TPU406
        model.load_state_dict(checkpoint["model"])
        start_epoch = checkpoint["epoch"] + 1

    train_loader, val_loader = build_loaders(args.data, args.batch_size, args.workers)
    for epoch in range(start_epoch, args.epochs):
        train_acc, train_loss = train_one_epoch(model, criterion, optimizer, scaler, train_loader, device, epoch, args.print_freq)
        val_acc = validate(model, val_loader, device)
        scheduler.step()
        print(f"epoch {epoch}: train acc {train_acc:.3f} loss {train_loss:.3f} val acc {val_acc:.3f}")  # ok
        if torch.cuda.is_available():
            print(f"peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")  # ok
        torch.save({"model": model.state_dict(), "epoch": epoch}, f"checkpoint_{epoch}.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

"""ImageNet ResNet-50 training, the classic pytorch/examples recipe with AMP, being moved from an
8xA100 box to a single TPU VM with PyTorch/XLA. The device lines were changed; the rest of the
loop still carries the CUDA-era habits (pinned memory, GradScaler, synchronize for timing)."""
import argparse
import os
import shutil
import time

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as T
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("--arch", default="resnet50")
parser.add_argument("--epochs", type=int, default=90)
parser.add_argument("-b", "--batch-size", type=int, default=256)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--resume", default="")
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--print-freq", type=int, default=10)


class AverageMeter:
    def __init__(self, name):
        self.name, self.sum, self.count = name, 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        _, pred = output.topk(maxk, 1, True, True)
        correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
        return [correct[:k].reshape(-1).float().sum(0) * (100.0 / target.size(0)) for k in topk]


def train(loader, model, criterion, optimizer, scaler, epoch, device, args):
    losses, top1 = AverageMeter("Loss"), AverageMeter("Acc@1")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(loader):  # expect: TPU607, TPU605
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        with torch.cuda.amp.autocast():  # expect: TPU504
            output = model(images)
            loss = criterion(output, target)
            scaler.scale(loss).backward()  # expect: TPU507
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        acc1, = accuracy(output, target)
        losses.update(loss.item(), images.size(0))  # expect: TPU101
        top1.update(acc1.item(), images.size(0))  # expect: TPU101
        if i % args.print_freq == 0:
            torch.cuda.synchronize()  # expect: TPU404
            print(f"Epoch [{epoch}][{i}/{len(loader)}] time {time.time() - end:.3f} loss {losses.avg:.4f} acc1 {top1.avg:.2f}")  # ok
            end = time.time()


def validate(loader, model, criterion, device):
    top1 = AverageMeter("Acc@1")
    model.eval()
    with torch.no_grad():
        for images, target in loader:  # expect: TPU607
            images, target = images.to(device), target.to(device)
            output = model(images)
            acc1, = accuracy(output, target)
            top1.update(acc1, images.size(0))  # ok (accumulates a device tensor)
    xm.mark_step()  # expect: TPU601
    return float(top1.avg)  # ok


def main():
    args = parser.parse_args()
    if args.seed is not None:
        torch.manual_seed(args.seed)
        torch.backends.cudnn.deterministic = True  # expect: TPU411
    device = torch_xla.device()
    model = models.__dict__[args.arch]().to(device)
    criterion = nn.CrossEntropyLoss().to(device)  # ok
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    start_epoch, best_acc1 = 0, 0.0
    if args.resume and os.path.isfile(args.resume):
        checkpoint = torch.load(args.resume)  # expect: TPU406
        start_epoch, best_acc1 = checkpoint["epoch"], checkpoint["best_acc1"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])

    normalize = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_set = datasets.ImageFolder(os.path.join(args.data, "train"), T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), normalize]))
    val_set = datasets.ImageFolder(os.path.join(args.data, "val"), T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), normalize]))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=16, pin_memory=True, drop_last=True)  # expect: TPU410
    val_loader = DataLoader(val_set, batch_size=args.batch_size, shuffle=False, num_workers=16)  # ok

    for epoch in range(start_epoch, args.epochs):
        train(train_loader, model, criterion, optimizer, scaler, epoch, device, args)
        scheduler.step()
        acc1 = validate(val_loader, model, criterion, device)
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        state = {"epoch": epoch + 1, "state_dict": model.state_dict(), "best_acc1": best_acc1, "optimizer": optimizer.state_dict()}
        torch.save(state, "checkpoint.pth.tar")  # expect: TPU408
        if is_best:
            shutil.copyfile("checkpoint.pth.tar", "model_best.pth.tar")


if __name__ == "__main__":
    main()

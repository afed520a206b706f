# train_seg.py -- DeepLabV3 on Cityscapes. Originally a CUDA AMP script (2x A100); this is the
# first pass of the port to a TPU v4 VM with torch_xla. Half of the CUDA bits are still in.
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader
from torchvision import transforms
from torchvision.datasets import Cityscapes
from torchvision.models.segmentation import deeplabv3_resnet50

torch.backends.cudnn.benchmark = True  # ok
torch.backends.cudnn.deterministic = True  # expect: TPU411
torch.backends.cuda.matmul.allow_tf32 = True  # ok

IGNORE = 255


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/data/cityscapes")
    p.add_argument("--epochs", type=int, default=80)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--resume", default="")
    return p.parse_args()


def poly_lr(optimizer, base_lr, it, max_it, power=0.9):
    lr = base_lr * (1 - it / max_it) ** power
    for g in optimizer.param_groups:
        g["lr"] = lr
    return lr


def confusion(pred, target, n=19):
    valid = target != IGNORE
    idx = target[valid] * n + pred[valid]  # expect: TPU302
    return torch.bincount(idx, minlength=n * n).reshape(n, n)  # expect: TPU304


def main():
    args = get_args()
    device = torch_xla.device()
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    target_tf = transforms.PILToTensor()
    train_set = Cityscapes(args.data, split="train", mode="fine", target_type="semantic", transform=tf, target_transform=target_tf)
    val_set = Cityscapes(args.data, split="val", mode="fine", target_type="semantic", transform=tf, target_transform=target_tf)
    train_loader = DataLoader(train_set, batch_size=args.bs, shuffle=True, num_workers=8, pin_memory=True, drop_last=True)  # expect: TPU410
    val_loader = DataLoader(val_set, batch_size=4, num_workers=4)  # ok

    model = deeplabv3_resnet50(num_classes=19, aux_loss=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    model = model.to(device)  # expect: TPU409
    criterion = nn.CrossEntropyLoss(ignore_index=IGNORE)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume)  # expect: TPU406
        model.load_state_dict(ckpt["model"])
        start_epoch = ckpt["epoch"] + 1

    max_it = args.epochs * len(train_loader)
    it = start_epoch * len(train_loader)
    for epoch in range(start_epoch, args.epochs):
        model.train()
        t0 = time.time()
        for images, targets in train_loader:  # expect: TPU607
            images = images.to(device, non_blocking=True)
            targets = targets.squeeze(1).long().to(device, non_blocking=True)
            poly_lr(optimizer, args.lr, it, max_it)
            with torch.cuda.amp.autocast():  # expect: TPU504
                out = model(images)
                loss = criterion(out["out"], targets) + 0.4 * criterion(out["aux"], targets)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            xm.mark_step()  # expect: TPU601
            it += 1
            if it % 50 == 0:
                xm.master_print(f"it {it} loss {loss.item():.4f}")  # ok
        torch.cuda.synchronize()  # expect: TPU404
        print(f"epoch {epoch} took {time.time() - t0:.1f}s")  # debatable (timed across mark_step; only the throttled .item() waits)

        model.eval()
        conf = torch.zeros(19, 19, dtype=torch.long, device=device)
        with torch.no_grad():
            for images, targets in val_loader:  # expect: TPU607
                images, targets = images.to(device), targets.squeeze(1).long().to(device)
                pred = model(images)["out"].argmax(1)
                conf += confusion(pred, targets)
        conf = conf.cpu().numpy().astype(np.float64)  # ok
        iou = np.diag(conf) / (conf.sum(0) + conf.sum(1) - np.diag(conf) + 1e-10)
        print(f"epoch {epoch} mIoU {np.nanmean(iou):.4f}")  # ok
        xm.save({"model": model.state_dict(), "epoch": epoch}, f"ckpt_{epoch}.pt")  # ok


if __name__ == "__main__":
    main()

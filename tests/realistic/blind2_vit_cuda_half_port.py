"""Fine-tune a timm ViT. Originally a multi-GPU CUDA script; the training path was ported to torch_xla."""
import argparse
import os
import time

import timm
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

torch.backends.cudnn.benchmark = True  # ok
torch.backends.cuda.matmul.allow_tf32 = False  # expect: TPU411


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="vit_base_patch16_224")
    p.add_argument("--num-classes", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--distributed", action="store_true")
    return p.parse_args()


def evaluate(model, loader):
    model.eval()
    correct, seen = 0, 0
    with torch.no_grad():
        for images, labels in loader:
            images = images.cuda(non_blocking=True)  # expect: TPU403
            labels = labels.cuda(non_blocking=True)  # expect: TPU403
            correct += (model(images).argmax(-1) == labels).sum().item()  # ok
            seen += labels.numel()
    return correct / seen


def main(train_ds, val_ds):
    args = parse_args()
    if args.distributed:
        dist.init_process_group(backend="nccl")  # expect: TPU701
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # expect: TPU404
    device = torch_xla.device()  # ok
    model = timm.create_model(args.model, pretrained=True, num_classes=args.num_classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, drop_last=True, num_workers=8)  # ok
    device_loader = pl.MpDeviceLoader(loader, device)  # ok
    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        for images, labels in device_loader:
            with torch.cuda.amp.autocast():  # expect: TPU504
                logits = model(images)
                loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()  # expect: TPU404
        peak = torch.cuda.max_memory_allocated() / 2**30  # expect: TPU404
        xm.master_print(f"epoch {epoch}: {time.time() - t0:.0f}s, peak {peak:.1f} GiB")  # expect: TPU111
    eval_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: TPU402
    model = model.to(eval_device)
    with torch.autocast("xla", dtype=torch.bfloat16):  # ok
        acc = evaluate(model, DataLoader(val_ds, batch_size=256))
    xm.master_print(f"val acc {acc:.4f}")
    torch.save(model.state_dict(), "vit_final.pt")  # ok
    model = model.to(device).half()  # expect: TPU503
    acc_half = evaluate_on(model, pl.MpDeviceLoader(DataLoader(val_ds, batch_size=256, drop_last=True), device))
    xm.master_print(f"val acc (half) {acc_half:.4f}")


def evaluate_on(model, device_loader):
    correct = 0
    for images, labels in device_loader:
        correct += (model(images.half()).argmax(-1) == labels).sum()  # expect: TPU503
    return correct.item()  # ok

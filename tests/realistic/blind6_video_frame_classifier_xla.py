"""Kinetics-400 fine-tune of torchvision's R(2+1)D-18 with uniform frame sampling, moved from a
GPU mixed-precision script to a TPU VM with torch_xla. Multi-clip evaluation with top-1/top-5
and a confusion matrix."""
import argparse
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, Dataset
from torchvision.io import read_video
from torchvision.models.video import R2Plus1D_18_Weights, r2plus1d_18

MEAN = torch.tensor([0.43216, 0.394666, 0.37645]).view(3, 1, 1, 1)  # ok
STD = torch.tensor([0.22803, 0.22145, 0.216989]).view(3, 1, 1, 1)  # ok


class ClipDataset(Dataset):
    def __init__(self, index_file, frames=16, clips=1, train=True):
        with open(index_file) as f:
            self.items = [(p, int(c)) for p, c in (line.split() for line in f)]
        self.frames, self.clips, self.train = frames, clips, train

    def __len__(self):
        return len(self.items)

    def sample(self, video):
        span = max(1, video.shape[0] - 2 * self.frames)
        start = random.randint(0, span - 1) if self.train else span // 2
        idx = torch.linspace(start, start + 2 * self.frames - 1, self.frames).long().clamp(max=video.shape[0] - 1)  # ok
        clip = video[idx].permute(3, 0, 1, 2).float() / 255.0  # ok
        clip = F.interpolate(clip, size=(128, 171), mode="bilinear", align_corners=False)  # ok
        top, left = (random.randint(0, 16), random.randint(0, 59)) if self.train else (8, 29)
        return (clip[:, :, top:top + 112, left:left + 112] - MEAN) / STD  # ok

    def __getitem__(self, i):
        path, label = self.items[i]
        video, _, _ = read_video(path, pts_unit="sec", output_format="THWC")
        clips = torch.stack([self.sample(video) for _ in range(self.clips)])
        return clips, label


def evaluate(model, loader, device, num_classes):
    model.eval()
    top1 = top5 = seen = 0
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.long)  # expect: TPU405
    with torch.no_grad():
        for clips, y in loader:
            b, k = clips.shape[:2]
            logits = model(clips.flatten(0, 1)).view(b, k, -1).softmax(-1).mean(1)
            pred = logits.argmax(-1)
            top1 += (pred == y).sum()  # ok
            top5 += (logits.topk(5, -1).indices == y[:, None]).any(-1).sum()  # ok
            confusion.index_put_((y, pred), torch.ones_like(y), accumulate=True)
            seen += b
    return top1.item() / seen, top5.item() / seen, confusion  # ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-index", default="k400_train.txt")
    parser.add_argument("--val-index", default="k400_val.txt")
    parser.add_argument("--epochs", type=int, default=45)
    args = parser.parse_args()

    device = xm.xla_device()  # expect: TPU602
    model = r2plus1d_18(weights=R2Plus1D_18_Weights.KINETICS400_V1)
    model.fc = nn.Linear(model.fc.in_features, 400)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505

    train_loader = DataLoader(ClipDataset(args.train_index), batch_size=32, shuffle=True, num_workers=12, drop_last=True)  # ok
    val_loader = DataLoader(ClipDataset(args.val_index, clips=5, train=False), batch_size=8, num_workers=12, drop_last=True)  # ok
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    val_device_loader = pl.MpDeviceLoader(val_loader, device)

    for epoch in range(args.epochs):
        model.train()
        for step, (clips, y) in enumerate(train_device_loader):
            with torch.autocast("cuda", dtype=torch.float16):  # expect: TPU504|TPU503
                loss = F.cross_entropy(model(clips[:, 0]), y, label_smoothing=0.1)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if step % 50 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss {loss.item():.3f} scale {scaler.get_scale():.0f}")  # ok
        scheduler.step()
        acc1, acc5, confusion = evaluate(model, val_device_loader, device, 400)
        worst = (confusion.diag() / confusion.sum(1).clamp(min=1)).argsort()[:5].tolist()  # ok
        xm.master_print(f"epoch {epoch} top1 {acc1:.3f} top5 {acc5:.3f} worst classes {worst}")
    xm.save(model.state_dict(), "r2plus1d_k400_tpu.pt")  # ok


if __name__ == "__main__":
    main()

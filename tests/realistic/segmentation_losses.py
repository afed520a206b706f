"""Losses for semantic segmentation with an ignore index (255)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DiceCELoss(nn.Module):
    def __init__(self, num_classes, ignore_index=255, smooth=1.0):
        super().__init__()
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.smooth = smooth

    def forward(self, logits, target):
        ce = F.cross_entropy(logits, target, ignore_index=self.ignore_index)
        valid = target != self.ignore_index
        target = target.clone()
        target[~valid] = 0  # expect: TPU302
        onehot = F.one_hot(target, self.num_classes).permute(0, 3, 1, 2).float()  # ok
        probs = logits.softmax(1) * valid.unsqueeze(1)
        inter = (probs * onehot).sum((0, 2, 3))
        union = probs.sum((0, 2, 3)) + onehot.sum((0, 2, 3))
        dice = 1 - (2 * inter + self.smooth) / (union + self.smooth)
        present = torch.unique(target[valid])  # expect: TPU302, TPU304
        return ce + dice[present].mean()


class OhemCELoss(nn.Module):
    def __init__(self, thresh=0.7, min_kept=100000, ignore_index=255):
        super().__init__()
        self.thresh = -torch.log(torch.tensor(thresh))
        self.min_kept = min_kept
        self.ignore_index = ignore_index

    def forward(self, logits, target):
        loss = F.cross_entropy(logits, target, ignore_index=self.ignore_index, reduction="none").flatten()
        hard = loss[loss > self.thresh.to(loss.device)]  # expect: TPU302
        if hard.numel() < self.min_kept:  # debatable
            hard, _ = loss.topk(self.min_kept)
        return hard.mean()


class StaticOhemCELoss(OhemCELoss):
    def forward(self, logits, target):
        loss = F.cross_entropy(logits, target, ignore_index=self.ignore_index, reduction="none").flatten()
        top, _ = loss.topk(self.min_kept)  # ok
        weight = (loss > self.thresh.to(loss.device)).float()  # ok
        return torch.maximum((loss * weight).sum() / weight.sum().clamp(min=1), top.mean())  # ok

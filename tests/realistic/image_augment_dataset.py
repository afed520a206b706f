"""Dataset and augmentations that run in DataLoader workers, on host tensors."""
import random

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import Dataset


class RandomErasing:
    def __init__(self, p=0.25, scale=(0.02, 0.33)):
        self.p = p
        self.scale = scale

    def __call__(self, img):
        if torch.rand(1) > self.p:  # ok
            return img
        c, h, w = img.shape
        area = h * w * random.uniform(*self.scale)
        eh = int(area ** 0.5)
        y, x = torch.randint(0, h - eh, (1,)).item(), torch.randint(0, w - eh, (1,)).item()  # ok
        img[:, y : y + eh, x : x + eh] = torch.randn(c, eh, eh)
        return img


class MixupCollate:
    def __init__(self, alpha=0.2, num_classes=1000):
        self.alpha = alpha
        self.num_classes = num_classes

    def __call__(self, batch):
        images = torch.stack([b[0] for b in batch])
        labels = F.one_hot(torch.tensor([b[1] for b in batch]), self.num_classes).float()  # ok
        lam = float(np.random.beta(self.alpha, self.alpha))
        perm = torch.randperm(images.size(0))  # ok
        return lam * images + (1 - lam) * images[perm], lam * labels + (1 - lam) * labels[perm]


class FolderDataset(Dataset):
    def __init__(self, paths, labels, size=224):
        self.paths = paths
        self.labels = labels
        self.size = size
        self.erase = RandomErasing()

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        img = torch.from_numpy(np.asarray(Image.open(self.paths[i]).convert("RGB"), dtype=np.float32) / 255.0)  # ok
        img = img.permute(2, 0, 1)
        img = F.interpolate(img[None], size=(self.size, self.size), mode="bicubic", antialias=True)[0]  # ok
        if img.mean() < 0.01:  # ok
            img = img + 0.01
        return self.erase(img), self.labels[i]

"""Semantic segmentation (DeepLabV3-ResNet50 on Cityscapes, 19 classes, ignore index 255) trained
on a TPU with torch_xla; evaluation computes mIoU from a confusion matrix."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision.models.segmentation import deeplabv3_resnet50

import torch_xla
import torch_xla.core.xla_model as xm

NUM_CLASSES, IGNORE = 19, 255
CLASS_FREQ = [0.3687, 0.0608, 0.2282, 0.0066, 0.0088, 0.0123, 0.0021, 0.0055, 0.1593, 0.0116,
              0.0402, 0.0122, 0.0014, 0.0699, 0.0027, 0.0024, 0.0023, 0.0010, 0.0041]


class CityscapesCrops(Dataset):
    def __init__(self, pairs, crop=768, train=True):
        self.pairs, self.crop, self.train = pairs, crop, train

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        img = torch.from_numpy(np.asarray(Image.open(self.pairs[i][0]), dtype=np.float32) / 255.0).permute(2, 0, 1)  # ok
        mask = torch.from_numpy(np.asarray(Image.open(self.pairs[i][1]), dtype=np.int64))  # ok
        if self.train:
            scale = random.uniform(0.5, 2.0)
            img = F.interpolate(img[None], scale_factor=scale, mode="bilinear", align_corners=False)[0]  # ok
            mask = F.interpolate(mask[None, None].float(), scale_factor=scale, mode="nearest")[0, 0].long()  # ok
            top = random.randint(0, max(0, img.shape[1] - self.crop))
            left = random.randint(0, max(0, img.shape[2] - self.crop))
            img = img[:, top:top + self.crop, left:left + self.crop]
            mask = mask[top:top + self.crop, left:left + self.crop]
        return img, mask


def class_weights():
    freq = torch.tensor(CLASS_FREQ)  # expect: TPU405
    return 1.0 / torch.log(1.02 + freq)


def evaluate(model, loader, device):
    model.eval()
    confusion = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long, device=device)  # ok
    with torch.no_grad():
        for images, masks in loader:  # expect: TPU607
            images, masks = images.to(device), masks.to(device)
            logits = model(images)["out"]
            preds = F.interpolate(logits, size=masks.shape[-2:], mode="bilinear", align_corners=False).argmax(1)  # ok
            valid = masks != IGNORE
            idx = masks[valid] * NUM_CLASSES + preds[valid]  # expect: TPU302
            confusion += torch.bincount(idx, minlength=NUM_CLASSES ** 2).view(NUM_CLASSES, NUM_CLASSES)  # expect: TPU304
            torch_xla.sync()
    confusion = confusion.cpu().double()  # ok
    iou = confusion.diag() / (confusion.sum(0) + confusion.sum(1) - confusion.diag())
    return iou[~torch.isnan(iou)].mean().item()  # ok


def main(train_pairs, val_pairs, epochs=120):
    device = torch_xla.device()
    model = deeplabv3_resnet50(num_classes=NUM_CLASSES, aux_loss=False).to(device)
    criterion = nn.CrossEntropyLoss(weight=class_weights(), ignore_index=IGNORE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    train_loader = DataLoader(CityscapesCrops(train_pairs), batch_size=8, shuffle=True, drop_last=True, num_workers=8)  # ok
    val_loader = DataLoader(CityscapesCrops(val_pairs, train=False), batch_size=4, num_workers=4)  # ok
    for epoch in range(epochs):
        model.train()
        for step, (images, masks) in enumerate(train_loader):  # expect: TPU607
            images, masks = images.to(device), masks.to(device)
            loss = criterion(model(images)["out"], masks)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
        miou = evaluate(model, val_loader, device)
        xm.master_print(f"epoch {epoch}: mIoU {miou:.4f}")  # ok
        torch.save(model.state_dict(), f"deeplab_{epoch}.pt")  # expect: TPU408


if __name__ == "__main__":
    main(*torch.load("cityscapes_pairs.pt"))  # ok

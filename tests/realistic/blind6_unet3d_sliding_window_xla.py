"""3D U-Net for abdominal organ segmentation (BTCV-style volumes), ported from a CUDA training
script to a single TPU chip with torch_xla. Random 96^3 patches for training, sliding-window
inference over whole volumes for validation Dice."""
import argparse
import glob

import nibabel as nib
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.utils.data import DataLoader, Dataset

PATCH = 96
NUM_CLASSES = 14
torch.backends.cudnn.benchmark = True  # ok
torch.backends.cudnn.deterministic = True  # expect: TPU411


class PatchDataset(Dataset):
    def __init__(self, pairs, samples_per_volume=4):
        self.pairs, self.k = pairs, samples_per_volume

    def __len__(self):
        return len(self.pairs) * self.k

    def __getitem__(self, i):
        img = np.asarray(nib.load(self.pairs[i // self.k][0]).dataobj, dtype=np.float32)
        seg = np.asarray(nib.load(self.pairs[i // self.k][1]).dataobj, dtype=np.int64)
        img = np.clip((img + 175.0) / 425.0, 0.0, 1.0)
        z, y, x = [np.random.randint(0, s - PATCH + 1) for s in img.shape]
        crop = img[z:z + PATCH, y:y + PATCH, x:x + PATCH]  # ok
        return torch.from_numpy(crop[None].copy()), torch.from_numpy(seg[z:z + PATCH, y:y + PATCH, x:x + PATCH].copy())  # ok


def block(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.InstanceNorm3d(cout), nn.LeakyReLU(0.01, inplace=True),
                         nn.Conv3d(cout, cout, 3, padding=1), nn.InstanceNorm3d(cout), nn.LeakyReLU(0.01, inplace=True))


class UNet3D(nn.Module):
    def __init__(self, widths=(32, 64, 128, 256)):
        super().__init__()
        self.down = nn.ModuleList([block(1, widths[0])] + [block(a, b) for a, b in zip(widths, widths[1:])])
        self.up = nn.ModuleList(nn.ConvTranspose3d(b, a, 2, stride=2) for a, b in zip(widths, widths[1:]))  # ok
        self.dec = nn.ModuleList(block(2 * a, a) for a in widths[:-1])
        self.heads = nn.ModuleList(nn.Conv3d(a, NUM_CLASSES, 1) for a in widths[:-1])

    def forward(self, x):
        skips = []
        for i, enc in enumerate(self.down):
            x = enc(x if i == 0 else F.max_pool3d(x, 2))  # ok
            skips.append(x)
        outs = []
        for up, dec, head, skip in reversed(list(zip(self.up, self.dec, self.heads, skips[:-1]))):
            x = dec(torch.cat([up(x), skip], 1))
            outs.append(head(x))
        return outs[-1], outs[:-1]


def dice_loss(logits, target):
    probs = logits.softmax(1)
    onehot = F.one_hot(target, NUM_CLASSES).permute(0, 4, 1, 2, 3).to(probs.dtype)
    inter = (probs * onehot).sum((2, 3, 4))
    dice = (2 * inter + 1e-5) / (probs.sum((2, 3, 4)) + onehot.sum((2, 3, 4)) + 1e-5)
    present = torch.unique(target)  # expect: TPU304
    return 1 - dice[:, present].mean()


def deep_supervision_loss(main, aux, target):
    loss = F.cross_entropy(main, target) + dice_loss(main, target)
    for w, logits in zip((0.5, 0.25), reversed(aux)):
        up = F.interpolate(logits, size=target.shape[-3:], mode="trilinear", align_corners=False)  # expect: TPU202
        loss = loss + w * F.cross_entropy(up, target)
    return loss


@torch.no_grad()
def sliding_window(model, volume, device, stride=48):
    D, H, W = volume.shape[-3:]
    acc = torch.zeros(NUM_CLASSES, D, H, W)  # ok
    for z in range(0, D - PATCH + 1, stride):
        for y in range(0, H - PATCH + 1, stride):
            for x in range(0, W - PATCH + 1, stride):
                tile = volume[None, None, z:z + PATCH, y:y + PATCH, x:x + PATCH].to(device)  # ok
                logits, _ = model(tile)
                acc[:, z:z + PATCH, y:y + PATCH, x:x + PATCH] += logits[0].softmax(0).cpu()  # debatable
    return acc.argmax(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="/data/btcv")
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    images = sorted(glob.glob(f"{args.root}/imagesTr/*.nii.gz"))
    labels = sorted(glob.glob(f"{args.root}/labelsTr/*.nii.gz"))
    pairs = list(zip(images, labels))

    device = torch_xla.device()
    model = UNet3D().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.99, nesterov=True)
    if args.resume:
        model.load_state_dict(torch.load(args.resume))  # expect: TPU406
    train_loader = DataLoader(PatchDataset(pairs[:24]), batch_size=2, shuffle=True, num_workers=8, pin_memory=True)  # expect: TPU306, TPU410

    best = 0.0
    for epoch in range(500):
        model.train()
        epoch_loss = 0.0
        for img, seg in train_loader:  # expect: TPU607
            img, seg = img.to(device), seg.to(device)
            main_out, aux = model(img)
            loss = deep_supervision_loss(main_out, aux, seg)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            epoch_loss += loss.item()  # expect: TPU101
        if epoch % 10 == 0:
            model.eval()
            scores = []
            for img_path, seg_path in pairs[24:]:
                vol = torch.from_numpy(np.clip((nib.load(img_path).get_fdata(dtype=np.float32) + 175.0) / 425.0, 0.0, 1.0))  # ok
                gt = torch.from_numpy(np.asarray(nib.load(seg_path).dataobj, dtype=np.int64))
                pred = sliding_window(model, vol, device)
                scores.append(np.mean([2.0 * ((pred == c) & (gt == c)).sum().item() / max(1, ((pred == c).sum() + (gt == c).sum()).item()) for c in range(1, NUM_CLASSES)]))  # ok
            print(f"epoch {epoch} loss {epoch_loss / len(train_loader):.4f} val dice {np.mean(scores):.4f}")
            if np.mean(scores) > best:
                best = float(np.mean(scores))
                torch.save(model.state_dict(), "unet3d_best.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

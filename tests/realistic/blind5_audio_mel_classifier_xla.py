"""Environmental-sound classifier (ESC-50 style): log-mel spectrograms computed on the device on
the fly, SpecAugment, mixup and a small CNN, trained with torch_xla's device loader."""
import time

import numpy as np
import soundfile as sf
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
from torch.utils.data import DataLoader, Dataset

import torch_xla
import torch_xla.distributed.parallel_loader as pl

SAMPLE_RATE = 16000
CLASS_COUNTS = [40] * 45 + [12] * 5


class Clips(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        path, label = self.rows[i]
        wave, _ = sf.read(path, dtype="float32")
        return torch.from_numpy(wave), label  # ok


def pad_collate(batch):
    longest = max(len(w) for w, _ in batch)  # expect: TPU308
    waves = torch.zeros(len(batch), longest)
    for i, (w, _) in enumerate(batch):
        waves[i, : len(w)] = w  # ok
    return waves, torch.tensor([label for _, label in batch])


class MelFrontend(nn.Module):
    def __init__(self):
        super().__init__()
        self.mel = torchaudio.transforms.MelSpectrogram(SAMPLE_RATE, n_fft=1024, hop_length=320, n_mels=64)  # expect: TPU204
        self.to_db = torchaudio.transforms.AmplitudeToDB(top_db=80)
        self.freq_mask = torchaudio.transforms.FrequencyMasking(16)
        self.time_mask = torchaudio.transforms.TimeMasking(48)

    def forward(self, waves):
        spec = self.to_db(self.mel(waves)).unsqueeze(1)
        if self.training:
            spec = self.time_mask(self.freq_mask(spec))
        return spec


class SoundCNN(nn.Module):
    def __init__(self, n_classes=50):
        super().__init__()
        self.frontend = MelFrontend()
        self.convs = nn.Sequential(
            nn.Conv2d(1, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, padding=1), nn.BatchNorm2d(256), nn.ReLU(),
        )
        self.head = nn.Linear(256, n_classes)

    def forward(self, waves):
        h = self.convs(self.frontend(waves))
        return self.head(h.mean(dim=(2, 3)))


def main(rows, epochs=60):
    device = torch_xla.device()
    model = SoundCNN().to(device)
    weights = torch.tensor(1.0 / np.asarray(CLASS_COUNTS, dtype=np.float32))  # expect: TPU405
    criterion = nn.CrossEntropyLoss(weight=weights / weights.sum() * len(CLASS_COUNTS))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(Clips(rows), batch_size=64, shuffle=True, collate_fn=pad_collate, drop_last=True)  # ok
    device_loader = pl.MpDeviceLoader(loader, device)
    start = time.time()
    for epoch in range(epochs):
        model.train()
        for waves, labels in device_loader:
            lam = float(np.random.beta(0.4, 0.4))  # ok
            perm = torch.randperm(waves.size(0), device=device)  # ok
            mixed = lam * waves + (1 - lam) * waves[perm]
            logits = model(mixed)
            loss = lam * criterion(logits, labels) + (1 - lam) * criterion(logits, labels[perm])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        epoch_time = time.time() - start  # expect: TPU111
        print(f"epoch {epoch} done after {epoch_time:.1f}s")  # ok
    torch_xla.sync(wait=True)
    print(f"total {time.time() - start:.1f}s")  # ok
    return model


if __name__ == "__main__":
    import csv

    with open("meta/esc50.csv") as f:
        main([(f"audio/{r['filename']}", int(r["target"])) for r in csv.DictReader(f)])

"""Keyword spotting on Speech Commands v2 with PyTorch Lightning, trained on a TPU v3-8
(`Trainer(accelerator="tpu", devices=8)`). Log-mel front end inside the model, SpecAugment,
a small depthwise-separable CNN, and a top-1 / per-class recall metric."""
import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
from torch.utils.data import DataLoader

LABELS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "_unknown_", "_silence_"]
SAMPLE_RATE = 16000


class SpeechCommandsDM(L.LightningDataModule):
    def __init__(self, root="data", batch_size=256):
        super().__init__()
        self.root = root
        self.batch_size = batch_size

    def setup(self, stage=None):
        self.train_set = torchaudio.datasets.SPEECHCOMMANDS(self.root, subset="training", download=True)
        self.val_set = torchaudio.datasets.SPEECHCOMMANDS(self.root, subset="validation", download=True)

    @staticmethod
    def collate(batch):
        waves, targets = [], []
        for wave, sr, label, *_ in batch:
            wave = wave[0]
            if wave.numel() < SAMPLE_RATE:
                wave = F.pad(wave, (0, SAMPLE_RATE - wave.numel()))  # ok
            waves.append(wave[:SAMPLE_RATE])
            targets.append(LABELS.index(label) if label in LABELS else 10)
        return torch.stack(waves), torch.tensor(targets)  # ok

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=8, collate_fn=self.collate, pin_memory=True)  # expect: TPU306, TPU410

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=8, collate_fn=self.collate, drop_last=True)  # ok


class DSConv(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.pw(self.dw(x))))


class KWS(L.LightningModule):
    def __init__(self, n_classes=len(LABELS), lr=3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.melspec = torchaudio.transforms.MelSpectrogram(SAMPLE_RATE, n_fft=480, hop_length=160, n_mels=40)  # expect: TPU204
        self.freq_mask = torchaudio.transforms.FrequencyMasking(8)
        self.time_mask = torchaudio.transforms.TimeMasking(20)
        self.body = nn.Sequential(nn.Conv2d(1, 64, 3, 2, 1), DSConv(64, 64), DSConv(64, 128, 2), DSConv(128, 128), DSConv(128, 256, 2))
        self.head = nn.Linear(256, n_classes)
        self.register_buffer("class_counts", torch.zeros(n_classes))  # ok

    def forward(self, wave):
        feats = (self.melspec(wave) + 1e-6).log().unsqueeze(1)
        if self.training:
            feats = self.time_mask(self.freq_mask(feats))
        h = self.body(feats)
        return self.head(h.mean((-1, -2)))

    def training_step(self, batch, batch_idx):
        wave, y = batch
        noise = torch.randn(wave.shape) * 0.005  # expect: TPU405
        logits = self(wave + noise)
        loss = F.cross_entropy(logits, y, label_smoothing=0.1)
        self.log("train/loss", loss, on_step=True, prog_bar=True)  # ok
        return loss

    def on_validation_epoch_start(self):
        self.correct = torch.zeros(self.hparams.n_classes, device=self.device)  # ok
        self.total = torch.zeros(self.hparams.n_classes, device=self.device)  # ok

    def validation_step(self, batch, batch_idx):
        wave, y = batch
        pred = self(wave).argmax(-1)
        hits = (pred == y).float()
        self.correct.index_add_(0, y, hits)  # ok
        self.total.index_add_(0, y, torch.ones_like(hits))  # ok
        present = torch.unique(y)  # expect: TPU304
        self.log("val/classes_in_batch", float(present.numel()))  # debatable (reads the size of the unique above: the same sync, labelled there)

    def on_validation_epoch_end(self):
        recall = self.correct / self.total.clamp(min=1)
        self.log("val/acc", self.correct.sum() / self.total.sum())  # ok
        self.log("val/balanced_recall", recall.mean())  # ok
        worst = LABELS[int(recall.argmin())]  # ok
        print(f"worst keyword this epoch: {worst}")  # ok

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=1e-2)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=self.trainer.estimated_stepping_batches)
        return [opt], [{"scheduler": sched, "interval": "step"}]


if __name__ == "__main__":
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=30, precision="bf16-true")
    trainer.fit(KWS(), datamodule=SpeechCommandsDM())

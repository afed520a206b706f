"""Multilabel chest X-ray classification (14 findings) with a Lightning DataModule and
LightningModule, torchmetrics for AUROC / F1, trained on a TPU v4-8 through Lightning's XLA
accelerator (`accelerator="tpu"`)."""
import lightning as L
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchmetrics
import torchvision.transforms.v2 as T
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from timm import create_model
from torch.utils.data import DataLoader

from cxr_data import ChestXrayDataset

FINDINGS = 14


class ChestXrayDataModule(L.LightningDataModule):
    def __init__(self, root, batch_size=64, num_workers=8):
        super().__init__()
        self.root, self.batch_size, self.num_workers = root, batch_size, num_workers

    def setup(self, stage=None):
        tf_train = T.Compose([T.RandomResizedCrop(224, scale=(0.8, 1.0), antialias=True), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True)])  # ok (host transform)
        tf_eval = T.Compose([T.Resize(256, antialias=True), T.CenterCrop(224), T.ToDtype(torch.float32, scale=True)])  # ok
        self.train_ds = ChestXrayDataset(self.root, "train", tf_train)
        self.val_ds = ChestXrayDataset(self.root, "val", tf_eval)
        labels = pd.read_csv(f"{self.root}/train_labels.csv").iloc[:, 1:].to_numpy()
        self.pos_fraction = labels.mean(0)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.batch_size, shuffle=True, num_workers=self.num_workers)  # expect: TPU306

    def val_dataloader(self):
        return DataLoader(self.val_ds, batch_size=self.batch_size, num_workers=self.num_workers)  # ok


class MultilabelClassifier(L.LightningModule):
    def __init__(self, pos_fraction, lr=3e-4):
        super().__init__()
        self.save_hyperparameters(ignore=["pos_fraction"])
        self.backbone = create_model("densenet121", pretrained=True, num_classes=FINDINGS)
        weights = torch.tensor((1 - pos_fraction) / pos_fraction, dtype=torch.float32)  # ok
        self.criterion = nn.BCEWithLogitsLoss(pos_weight=weights)  # ok (the loss module's buffer moves with the model)
        self.label_smoothing = torch.full((FINDINGS,), 0.05)
        self.val_auroc = torchmetrics.AUROC(task="multilabel", num_labels=FINDINGS, average="macro")
        self.val_f1 = torchmetrics.F1Score(task="multilabel", num_labels=FINDINGS, threshold=0.5)

    def forward(self, x):
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y = y * (1 - self.label_smoothing) + 0.5 * self.label_smoothing  # expect: TPU405
        logits = self(x)
        loss = self.criterion(logits, y)
        self.log("train/loss", loss, prog_bar=True)  # ok (Lightning reduces and syncs at its own cadence)
        if loss.isnan():  # expect: TPU107
            self.print(f"nan loss at batch {batch_idx}")
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        probs = torch.sigmoid(logits)
        self.val_auroc.update(probs, y.int())  # ok
        self.val_f1.update(probs, y.int())
        positives = y.sum(0)
        self.log("val/loss", F.binary_cross_entropy_with_logits(logits, y), sync_dist=True)  # ok
        self.log("val/present_labels", (positives > 0).sum().item())  # expect: TPU101

    def on_validation_epoch_end(self):
        self.log("val/auroc", self.val_auroc.compute())  # ok
        self.log("val/f1", self.val_f1.compute())  # ok
        self.val_auroc.reset()
        self.val_f1.reset()

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)
        return {"optimizer": opt, "lr_scheduler": sched}


def main():
    dm = ChestXrayDataModule("/mnt/data/chestxray14")
    dm.setup()
    model = MultilabelClassifier(dm.pos_fraction)
    trainer = L.Trainer(
        accelerator="tpu",
        devices=8,
        precision="bf16-true",
        max_epochs=20,
        callbacks=[ModelCheckpoint(monitor="val/auroc", mode="max"), LearningRateMonitor()],
        log_every_n_steps=50,
    )
    trainer.fit(model, datamodule=dm)


if __name__ == "__main__":
    main()

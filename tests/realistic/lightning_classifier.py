"""A LightningModule for image classification, trained with `accelerator="tpu"`."""
import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms


class LitClassifier(L.LightningModule):
    def __init__(self, num_classes=10, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        self.log("train_loss", loss, prog_bar=True)  # ok
        self.log("train_acc", acc.item())  # expect: TPU101
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        wrong = y[logits.argmax(dim=1) != y]  # expect: TPU302
        self.log("val_wrong", float(len(wrong)))  # ok
        self.log("val_loss", loss, sync_dist=True)  # ok

    def on_validation_epoch_end(self):
        # Once per epoch: reading a metric here is fine.
        metrics = self.trainer.callback_metrics
        if "val_loss" in metrics and metrics["val_loss"].item() < 0.05:  # ok
            print("val loss below 0.05")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class MNISTDataModule(L.LightningDataModule):
    def __init__(self, data_dir="./data", batch_size=128):
        super().__init__()
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])

    def setup(self, stage=None):
        full = datasets.MNIST(self.data_dir, train=True, download=True, transform=self.transform)
        self.train_set, self.val_set = random_split(full, [55000, 5000])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=4)  # expect: TPU306

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=4)  # ok


if __name__ == "__main__":
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=5, precision="bf16-true")
    trainer.fit(LitClassifier(), datamodule=MNISTDataModule())

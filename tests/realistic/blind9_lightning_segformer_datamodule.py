"""SegFormer-B2 semantic segmentation on ADE20K with PyTorch Lightning: a LightningDataModule for
the image/mask pairs, a LightningModule with per-class IoU accumulated as a confusion matrix, and
a Trainer on a TPU v4-8 (accelerator="tpu"). Adapted from a team's GPU training recipe."""
import albumentations as A
import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from albumentations.pytorch import ToTensorV2
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint
from torch.utils.data import DataLoader
from transformers import SegformerForSemanticSegmentation

from ade_data import ADE20KSegmentation

NUM_CLASSES = 150
IGNORE = 255


class ADE20KDataModule(L.LightningDataModule):
    def __init__(self, root, batch_size=16, crop=512, workers=8):
        super().__init__()
        self.root, self.batch_size, self.crop, self.workers = root, batch_size, crop, workers

    def setup(self, stage=None):
        train_tf = A.Compose([
            A.RandomResizedCrop(self.crop, self.crop, scale=(0.5, 2.0)),
            A.HorizontalFlip(),
            A.Normalize(),
            ToTensorV2(),
        ])
        val_tf = A.Compose([A.Resize(self.crop, self.crop), A.Normalize(), ToTensorV2()])
        self.train_set = ADE20KSegmentation(self.root, "training", train_tf)
        self.val_set = ADE20KSegmentation(self.root, "validation", val_tf)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=self.workers, pin_memory=True, persistent_workers=True)  # expect: TPU306, TPU410

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=self.workers, drop_last=True)  # ok


class SegFormerModule(L.LightningModule):
    def __init__(self, lr=6e-5, weight_decay=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.net = SegformerForSemanticSegmentation.from_pretrained("nvidia/mit-b2", num_labels=NUM_CLASSES)
        self.register_buffer("confusion", torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long))  # ok

    def forward(self, pixel_values):
        logits = self.net(pixel_values=pixel_values).logits
        return F.interpolate(logits, size=pixel_values.shape[-2:], mode="bicubic", align_corners=False)  # expect: TPU202

    def training_step(self, batch, batch_idx):
        images, masks = batch["image"], batch["mask"].long()
        logits = self(images)
        loss = F.cross_entropy(logits, masks, ignore_index=IGNORE)  # ok
        self.log("train/loss", loss, prog_bar=True, on_step=True)  # ok
        return loss

    def validation_step(self, batch, batch_idx):
        images, masks = batch["image"], batch["mask"].long()
        logits = self(images)
        preds = logits.argmax(1)
        valid = masks != IGNORE
        idx = masks[valid] * NUM_CLASSES + preds[valid]  # expect: TPU302
        self.confusion += torch.bincount(idx, minlength=NUM_CLASSES**2).view(NUM_CLASSES, NUM_CLASSES)  # expect: TPU304
        self.log("val/loss", F.cross_entropy(logits, masks, ignore_index=IGNORE), sync_dist=True)  # ok
        present = torch.unique(masks)  # expect: TPU304
        self.log("val/classes_in_batch", float(len(present)))  # ok (the unique above is the sync)

    def on_validation_epoch_end(self):
        conf = self.all_gather(self.confusion).sum(0).float()
        iou = conf.diag() / (conf.sum(0) + conf.sum(1) - conf.diag()).clamp(min=1)
        self.log("val/mIoU", iou.mean())  # ok
        self.confusion.zero_()

    def configure_optimizers(self):
        decay = [p for n, p in self.named_parameters() if p.ndim > 1]
        no_decay = [p for n, p in self.named_parameters() if p.ndim <= 1]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.hparams.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.hparams.lr,
        )
        sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=self.trainer.estimated_stepping_batches, power=1.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    torch.backends.cudnn.benchmark = True  # ok
    dm = ADE20KDataModule("/data/ADEChallengeData2016")
    model = SegFormerModule()
    trainer = L.Trainer(
        accelerator="tpu",
        devices=8,
        precision="bf16-true",
        max_steps=160_000,
        val_check_interval=4000,
        callbacks=[ModelCheckpoint(monitor="val/mIoU", mode="max"), LearningRateMonitor("step")],
    )
    trainer.fit(model, datamodule=dm)
    ckpt = torch.load(trainer.checkpoint_callback.best_model_path)  # expect: TPU406
    model.load_state_dict(ckpt["state_dict"])
    np.save("confusion.npy", model.confusion.cpu().numpy())  # ok


if __name__ == "__main__":
    main()

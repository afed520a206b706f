"""Lightning module for multi-label image tagging with validation mAP, trained with accelerator="tpu"."""
import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader


class Tagger(L.LightningModule):
    def __init__(self, num_tags=512, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = torchvision.models.efficientnet_b0(weights="DEFAULT")
        self.backbone.classifier = nn.Linear(1280, num_tags)
        self.register_buffer("pos_weight", torch.full((num_tags,), 4.0))  # ok
        self.val_scores, self.val_targets = [], []

    def forward(self, x):
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        images, targets = batch
        logits = self(images)
        loss = F.binary_cross_entropy_with_logits(logits, targets.float(), pos_weight=self.pos_weight)  # ok
        self.log("train/loss", loss, prog_bar=True)  # ok
        n_pos = int(targets.sum())  # expect: TPU106
        self.log("train/pos_per_image", n_pos / images.size(0))
        present = targets.any(dim=0).nonzero().squeeze(1)  # expect: TPU301
        self.log("train/tags_present", float(present.numel()))  # ok
        return loss

    def validation_step(self, batch, batch_idx):
        images, targets = batch
        logits = self(images)
        val_loss = F.binary_cross_entropy_with_logits(logits, targets.float())
        self.log("val/loss", val_loss, sync_dist=True)  # ok
        self.val_scores.append(logits.sigmoid().cpu())  # expect: TPU102
        self.val_targets.append(targets.cpu())  # expect: TPU102

    def on_validation_epoch_end(self):
        scores = torch.cat(self.val_scores)  # ok
        targets = torch.cat(self.val_targets)  # ok
        aps = []
        for k in range(scores.size(1)):
            pos = targets[:, k] == 1
            if pos.sum() == 0:  # ok
                continue
            order = scores[:, k].argsort(descending=True)
            hits = pos[order].float()  # ok
            precision_at = hits.cumsum(0) / torch.arange(1, len(hits) + 1)  # ok
            aps.append((precision_at * hits).sum() / hits.sum())
        self.log("val/mAP", torch.stack(aps).mean())  # ok
        self.log("val/p90_score", torch.quantile(scores, 0.9).item())  # ok
        self.val_scores.clear()
        self.val_targets.clear()

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.05)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=self.trainer.estimated_stepping_batches)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def fit(train_ds, val_ds):
    model = Tagger()
    trainer = L.Trainer(accelerator="tpu", devices=8, precision="bf16-true", max_epochs=10, log_every_n_steps=50)  # ok
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=8)  # expect: TPU306
    val_loader = DataLoader(val_ds, batch_size=64, num_workers=8)  # ok
    trainer.fit(model, train_loader, val_loader)

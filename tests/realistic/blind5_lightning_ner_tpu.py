"""Token-classification (NER) LightningModule moved from 8 GPUs to a TPU v3-8 by changing the
Trainer's accelerator; self.log metrics, a DataModule with a tokenizer-padding collate."""
import lightning as L
import torch
import torch.nn as nn
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer

MODEL = "bert-base-cased"
LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


class ConllDataModule(L.LightningDataModule):
    def __init__(self, batch_size=32):
        super().__init__()
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(MODEL)

    def setup(self, stage=None):
        self.data = load_dataset("conll2003")

    def collate(self, rows):
        enc = self.tokenizer([r["tokens"] for r in rows], is_split_into_words=True, truncation=True,
                             max_length=128, padding=True, return_tensors="pt")  # expect: TPU307
        labels = torch.full(enc.input_ids.shape, -100)  # ok
        for i, r in enumerate(rows):
            for j, word in enumerate(enc.word_ids(i)):
                if word is not None:
                    labels[i, j] = r["ner_tags"][word]  # ok
        enc["labels"] = labels
        return enc

    def train_dataloader(self):
        return DataLoader(self.data["train"], batch_size=self.batch_size, shuffle=True, collate_fn=self.collate)  # expect: TPU306

    def val_dataloader(self):
        return DataLoader(self.data["validation"], batch_size=64, collate_fn=self.collate)  # ok


class Tagger(L.LightningModule):
    def __init__(self, lr=3e-5):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = AutoModel.from_pretrained(MODEL)
        self.classifier = nn.Linear(self.encoder.config.hidden_size, len(LABELS))
        self.loss = nn.CrossEntropyLoss(ignore_index=-100)
        self.val_correct = []

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.classifier(hidden)

    def training_step(self, batch, batch_idx):
        logits = self(batch["input_ids"], batch["attention_mask"])
        loss = self.loss(logits.flatten(0, 1), batch["labels"].flatten())
        if torch.isnan(loss):  # expect: TPU107
            return None
        self.log("train_loss", loss, prog_bar=True)  # ok
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"])  # ok
        return loss

    def validation_step(self, batch, batch_idx):
        logits = self(batch["input_ids"], batch["attention_mask"])
        preds = logits.argmax(-1)
        mask = batch["labels"] != -100
        correct = (preds[mask] == batch["labels"][mask]).sum()  # expect: TPU302
        self.val_correct.append((correct.item(), mask.sum().item()))  # expect: TPU101
        self.log("val_loss", self.loss(logits.flatten(0, 1), batch["labels"].flatten()), sync_dist=True)  # ok

    def on_validation_epoch_end(self):
        correct = sum(c for c, _ in self.val_correct)
        total = sum(n for _, n in self.val_correct)
        self.log("val_token_acc", correct / max(1, total))  # ok
        self.val_correct.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)


if __name__ == "__main__":
    L.seed_everything(13)
    trainer = L.Trainer(accelerator="tpu", devices=8, precision="bf16-true", max_epochs=3, log_every_n_steps=50)  # ok
    trainer.fit(Tagger(), datamodule=ConllDataModule())
    trainer.save_checkpoint("ner-tpu.ckpt")  # ok

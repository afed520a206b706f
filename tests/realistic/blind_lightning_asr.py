"""A small CTC speech recogniser as a LightningModule, trained with `accelerator="tpu"`."""
import argparse

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from asr_data import CharTokenizer, SpeechDataset, collate_speech

torch.backends.cudnn.benchmark = True  # debatable


class ConformerLite(nn.Module):
    def __init__(self, n_mels=80, d_model=256, n_layers=6, vocab=32):
        super().__init__()
        self.proj = nn.Linear(n_mels, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=1024, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("window", torch.hann_window(400))  # ok
        self.mel = nn.Parameter(torch.randn(201, n_mels) * 0.01)  # ok

    def features(self, wav):
        spec = torch.stft(wav, n_fft=400, hop_length=160, window=self.window, return_complex=True)  # expect: TPU204
        power = spec.abs() ** 2
        return torch.log(power.transpose(1, 2) @ self.mel + 1e-6)

    def forward(self, wav, wav_lens):
        x = self.proj(self.features(wav))
        frames = x.size(1)
        pad_mask = torch.arange(frames)[None, :] >= (wav_lens[:, None] // 160)  # expect: TPU405
        x = self.encoder(x, src_key_padding_mask=pad_mask)
        return self.head(x).log_softmax(-1)


class SpeechModule(L.LightningModule):
    def __init__(self, lr=1e-3, vocab=32):
        super().__init__()
        self.save_hyperparameters()
        self.model = ConformerLite(vocab=vocab)
        self.ctc = nn.CTCLoss(blank=0, zero_infinity=True)  # expect: TPU203
        self.val_outputs = []
        self.best_loss = float("inf")

    def training_step(self, batch, batch_idx):
        wav, wav_lens, targets, target_lens = batch
        log_probs = self.model(wav, wav_lens)
        out_lens = wav_lens // 160 + 1
        loss = self.ctc(log_probs.transpose(0, 1), targets, out_lens, target_lens)
        self.log("train/loss", loss, prog_bar=True)  # ok
        self.log("train/frames", out_lens.float().mean().item())  # expect: TPU101
        if batch_idx % 200 == 0:
            self.print(f"step {self.global_step}: loss {loss.item():.3f}")  # ok
        print(f"batch {batch_idx} loss {loss}")  # expect: TPU103|TPU104
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if outputs["loss"] < self.best_loss:  # expect: TPU107
            self.best_loss = outputs["loss"].detach()

    def validation_step(self, batch, batch_idx):
        wav, wav_lens, targets, target_lens = batch
        log_probs = self.model(wav, wav_lens)
        out_lens = wav_lens // 160 + 1
        loss = self.ctc(log_probs.transpose(0, 1), targets, out_lens, target_lens)
        greedy = log_probs.argmax(-1)
        non_blank = torch.nonzero(greedy[0] != 0)  # expect: TPU301
        self.val_outputs.append(greedy.cpu())  # expect: TPU102
        self.log("val/loss", loss, sync_dist=True)  # ok
        self.log("val/first_len", float(non_blank.shape[0]))  # debatable
        return loss

    def on_validation_epoch_end(self):
        preds = torch.cat(self.val_outputs)  # ok
        blank_rate = (preds == 0).float().mean().item()  # ok
        self.log("val/blank_rate", blank_rate)  # ok
        self.val_outputs.clear()

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.98))
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=self.trainer.estimated_stepping_batches)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/librispeech")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()

    tokenizer = CharTokenizer()
    train_ds = SpeechDataset(args.data, "train-clean-100", tokenizer)
    val_ds = SpeechDataset(args.data, "dev-clean", tokenizer)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, num_workers=8, collate_fn=collate_speech)  # expect: TPU306
    val_loader = DataLoader(val_ds, batch_size=args.batch_size, num_workers=8, collate_fn=collate_speech)  # ok

    module = SpeechModule(vocab=len(tokenizer))
    trainer = L.Trainer(accelerator="tpu", devices=8, max_epochs=args.epochs, precision="bf16-true", log_every_n_steps=50)
    trainer.fit(module, train_loader, val_loader)
    ckpt = torch.load(trainer.checkpoint_callback.best_model_path, map_location="cpu")  # ok
    module.load_state_dict(ckpt["state_dict"])


if __name__ == "__main__":
    main()

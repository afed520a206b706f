"""Masked-LM pretraining of a BERT-style encoder on PyTorch/XLA."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def span_mask(seq_len, max_span=3):
    # Builds a CPU mask; used inside forward below.
    return torch.rand(seq_len) < 0.15


class MLMHead(nn.Module):
    def __init__(self, dim, vocab):
        super().__init__()
        self.transform = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.decoder = nn.Linear(dim, vocab)

    def forward(self, hidden, labels=None, mask=None):
        logits = self.decoder(self.transform(hidden))
        if labels is None:
            return logits
        selected = logits[mask]  # expect: TPU302
        return F.cross_entropy(selected, labels[mask])  # expect: TPU302


class Encoder(nn.Module):
    def __init__(self, vocab=30522, dim=768, layers=12, heads=12, max_len=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = MLMHead(dim, vocab)

    def forward(self, input_ids, labels=None):
        b, s = input_ids.shape
        h = self.embed(input_ids) + self.pos(torch.arange(s, device=input_ids.device))  # ok
        causal = torch.eye(s, dtype=torch.bool)  # expect: TPU405
        h = self.encoder(h, mask=causal)
        extra = span_mask(s)
        h = h + extra[None, :, None].to(h.dtype)  # expect: TPU405
        smoothing = torch.full((s,), 0.1)  # expect: TPU405
        h = h * (1 - smoothing[None, :, None])
        mlm_mask = labels != -100 if labels is not None else None
        return self.head(h, labels=labels, mask=mlm_mask)


def train(model, loader, optimizer, steps):
    device = torch_xla.device()
    model.to(device).train()
    for step, batch in enumerate(pl.MpDeviceLoader(loader, device)):
        loss = model(batch["input_ids"], labels=batch["labels"])
        loss.backward()
        xm.optimizer_step(optimizer)
        optimizer.zero_grad()
        scale = max(1.0, loss)  # expect: TPU1xx
        if bool(loss.isnan()):  # expect: TPU106|TPU107
            raise FloatingPointError("NaN loss")
        preds = model(batch["input_ids"]).argmax(-1).cpu().numpy()  # expect: TPU102
        if step == steps:
            break
    return preds, scale

"""Collators and loaders for a speech-to-text fine-tune on a TPU VM (torch_xla)."""
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader
from transformers import AutoProcessor, AutoTokenizer

import torch_xla
import torch_xla.distributed.parallel_loader as pl

processor = AutoProcessor.from_pretrained("openai/whisper-small")
tokenizer = AutoTokenizer.from_pretrained("openai/whisper-small")


def collate_dynamic(batch):
    feats = [b["features"] for b in batch]
    labels = [torch.tensor(b["labels"]) for b in batch]
    feat_lens = torch.tensor([f.size(0) for f in feats])  # ok
    feats = pad_sequence(feats, batch_first=True)  # expect: TPU308
    labels = pad_sequence(labels, batch_first=True, padding_value=-100)  # expect: TPU308
    return {"features": feats, "feature_lens": feat_lens, "labels": labels}


def collate_to_batch_max(batch, pad_id=0):
    max_len = max(len(b["input_ids"]) for b in batch)  # expect: TPU308
    ids = torch.full((len(batch), max_len), pad_id, dtype=torch.long)
    for i, b in enumerate(batch):
        ids[i, : len(b["input_ids"])] = torch.tensor(b["input_ids"])  # ok
    return {"input_ids": ids, "attention_mask": (ids != pad_id).long()}


class BucketCollator:
    def __init__(self, buckets=(64, 128, 256, 448), pad_id=0):
        self.buckets = buckets
        self.pad_id = pad_id

    def __call__(self, batch):
        longest = max(len(b["input_ids"]) for b in batch)  # ok
        width = next(w for w in self.buckets if w >= longest)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        for i, b in enumerate(batch):
            ids[i, : len(b["input_ids"])] = torch.tensor(b["input_ids"])
        return {"input_ids": ids}


def collate_fixed(batch, max_frames=3000, max_tokens=448):
    feats = torch.stack([F.pad(b["features"], (0, 0, 0, max_frames - b["features"].size(0))) for b in batch])  # ok
    text = [b["text"] for b in batch]
    labels = tokenizer(text, padding="max_length", max_length=max_tokens, truncation=True, return_tensors="pt")  # ok
    return {"features": feats, "labels": labels.input_ids}


def collate_processor(batch):
    audio = [b["audio"]["array"] for b in batch]
    inputs = processor(audio, sampling_rate=16000, padding="longest", return_tensors="pt")  # expect: TPU307
    labels = tokenizer([b["text"] for b in batch], padding=True, return_tensors="pt")  # expect: TPU307
    inputs["labels"] = labels.input_ids.masked_fill(labels.attention_mask == 0, -100)  # ok
    return inputs


def build_loaders(train_ds, val_ds, batch_size=32):
    device = torch_xla.device()
    train_loader = DataLoader(
        train_ds,
        batch_size=batch_size,
        shuffle=True,
        drop_last=True,
        collate_fn=collate_fixed,
        num_workers=4,
        pin_memory=True,  # expect: TPU410
    )
    val_loader = DataLoader(val_ds, batch_size=batch_size, collate_fn=collate_fixed)  # ok
    return pl.MpDeviceLoader(train_loader, device), pl.MpDeviceLoader(val_loader, device)

"""Data collators and loaders for instruction tuning; the loaders feed torch_xla's MpDeviceLoader."""
import json
import random

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset
from transformers import DataCollatorForSeq2Seq, DataCollatorWithPadding

import torch_xla
import torch_xla.distributed.parallel_loader as pl

IGNORE_INDEX = -100


class InstructionDataset(Dataset):
    def __init__(self, path, tokenizer, max_length=1024):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]
        self.tokenizer = tokenizer
        self.max_length = max_length

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        row = self.rows[idx]
        prompt = self.tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        answer = self.tokenizer(row["answer"], add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        ids = (prompt + answer)[: self.max_length]
        labels = ([IGNORE_INDEX] * len(prompt) + answer)[: self.max_length]
        return {"input_ids": torch.tensor(ids, dtype=torch.long), "labels": torch.tensor(labels, dtype=torch.long)}  # ok


def dynamic_collate(batch, pad_id=0):
    input_ids = pad_sequence([b["input_ids"] for b in batch], batch_first=True, padding_value=pad_id)  # expect: TPU308
    labels = pad_sequence([b["labels"] for b in batch], batch_first=True, padding_value=IGNORE_INDEX)  # expect: TPU308
    return {"input_ids": input_ids, "labels": labels, "attention_mask": (input_ids != pad_id).long()}  # ok


class PaddingCollator:
    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, batch):
        max_len = max(len(b["input_ids"]) for b in batch)  # expect: TPU308
        input_ids = torch.full((len(batch), max_len), self.pad_id, dtype=torch.long)  # ok
        labels = torch.full((len(batch), max_len), IGNORE_INDEX, dtype=torch.long)  # ok
        for i, b in enumerate(batch):
            n = len(b["input_ids"])
            input_ids[i, :n] = b["input_ids"]
            labels[i, :n] = b["labels"]
        labels[labels == self.pad_id] = IGNORE_INDEX  # ok
        return {"input_ids": input_ids, "labels": labels}


class BucketedCollator:
    """Pads every batch up to a multiple of `bucket` so only a few shapes are ever compiled."""

    def __init__(self, pad_id, bucket=128, max_length=1024):
        self.pad_id = pad_id
        self.bucket = bucket
        self.max_length = max_length

    def __call__(self, batch):
        longest = max(len(b["input_ids"]) for b in batch)  # ok
        target = min(self.max_length, ((longest + self.bucket - 1) // self.bucket) * self.bucket)
        input_ids = torch.full((len(batch), target), self.pad_id, dtype=torch.long)  # ok
        labels = torch.full((len(batch), target), IGNORE_INDEX, dtype=torch.long)  # ok
        for i, b in enumerate(batch):
            n = min(len(b["input_ids"]), target)
            input_ids[i, :n] = b["input_ids"][:n]
            labels[i, :n] = b["labels"][:n]
        return {"input_ids": input_ids, "labels": labels, "attention_mask": (input_ids != self.pad_id).long()}  # ok


class FixedLengthCollator:
    def __init__(self, tokenizer, max_length=512):
        self.tokenizer = tokenizer
        self.max_length = max_length

    def __call__(self, texts):
        enc = self.tokenizer(texts, padding="max_length", truncation=True, max_length=self.max_length, return_tensors="pt")  # ok
        enc["labels"] = enc["input_ids"].clone()
        enc["labels"][enc["attention_mask"] == 0] = IGNORE_INDEX  # ok
        return enc


def tokenize_for_classification(tokenizer, texts):
    return tokenizer(texts, padding="longest", truncation=True, max_length=512, return_tensors="pt")  # expect: TPU307


def make_hf_collators(tokenizer, model):
    dynamic = DataCollatorWithPadding(tokenizer)  # expect: TPU307
    fixed = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=512)  # ok
    seq2seq = DataCollatorForSeq2Seq(tokenizer, model=model, pad_to_multiple_of=128)  # ok
    return dynamic, fixed, seq2seq


def random_feature_table(num_rows, dim):
    table = np.random.randn(num_rows, dim)
    return torch.from_numpy(table)  # expect: TPU502


def feature_table_f32(num_rows, dim):
    table = np.random.randn(num_rows, dim).astype(np.float32)
    return torch.from_numpy(table)  # ok


def build_loaders(train_set, val_set, pad_id, batch_size=8, num_workers=4):
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers, collate_fn=BucketedCollator(pad_id))  # expect: TPU306
    val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, collate_fn=BucketedCollator(pad_id), pin_memory=True)  # expect: TPU410
    debug_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, collate_fn=dynamic_collate, drop_last=True)  # ok
    return train_loader, val_loader, debug_loader


def device_loaders(train_loader, val_loader):
    device = torch_xla.device()
    return pl.MpDeviceLoader(train_loader, device), pl.MpDeviceLoader(val_loader, device)  # ok


if __name__ == "__main__":
    random.seed(0)
    sample = [{"input_ids": torch.arange(random.randint(3, 40)), "labels": torch.arange(5)} for _ in range(4)]  # ok
    print(BucketedCollator(pad_id=0)(sample)["input_ids"].shape)  # ok

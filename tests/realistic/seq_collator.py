"""Collators for variable-length sequence batches (speech and text)."""
from dataclasses import dataclass

import torch
from torch.nn.utils.rnn import pad_sequence


@dataclass
class DynamicPaddingCollator:
    pad_token_id: int = 0

    def __call__(self, batch):
        max_len = max(len(example["input_ids"]) for example in batch)  # expect: TPU3xx
        input_ids = torch.full((len(batch), max_len), self.pad_token_id, dtype=torch.long)  # ok
        attention_mask = torch.zeros((len(batch), max_len), dtype=torch.long)  # ok
        for i, example in enumerate(batch):
            n = len(example["input_ids"])
            input_ids[i, :n] = torch.tensor(example["input_ids"])  # ok
            attention_mask[i, :n] = 1
        labels = torch.tensor([example["label"] for example in batch])  # ok
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


@dataclass
class FixedLengthCollator:
    max_length: int = 512
    pad_token_id: int = 0

    def __call__(self, batch):
        input_ids = torch.full((len(batch), self.max_length), self.pad_token_id, dtype=torch.long)  # ok
        for i, example in enumerate(batch):
            ids = example["input_ids"][: self.max_length]
            input_ids[i, : len(ids)] = torch.tensor(ids)  # ok
        return {"input_ids": input_ids, "attention_mask": (input_ids != self.pad_token_id).long()}  # ok


def speech_collate_fn(batch):
    features = [torch.as_tensor(example["features"]) for example in batch]  # ok
    targets = [torch.as_tensor(example["tokens"]) for example in batch]  # ok
    feature_lengths = torch.tensor([f.shape[0] for f in features])  # ok
    padded_features = pad_sequence(features, batch_first=True)  # expect: TPU308
    padded_targets = pad_sequence(targets, batch_first=True, padding_value=-100)  # expect: TPU308
    return padded_features, feature_lengths, padded_targets

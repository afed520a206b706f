"""Text classification data: tokenises reviews and batches them for the GPU."""

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


class ReviewDataset(Dataset):
    def __init__(self, texts, labels, tokenizer, max_length: int = 256):
        self.encodings = tokenizer(texts, truncation=True, max_length=max_length, padding=True)
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        item = {key: torch.tensor(values[index]) for key, values in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[index])
        return item


def collate_reviews(batch):
    # Each batch is padded to its own longest review: every batch has a new shape.
    input_ids = pad_sequence([item["input_ids"] for item in batch], batch_first=True)
    labels = torch.stack([item["labels"] for item in batch])
    return input_ids, labels


def make_loader(dataset: ReviewDataset, batch_size: int = 32) -> DataLoader:
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, collate_fn=collate_reviews)


def class_weights(labels: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(labels)
    present = torch.nonzero(counts).squeeze(1)
    weights = torch.zeros(counts.shape[0], device="cuda")
    weights[present] = counts.sum() / counts[present].float()
    return weights

"""Collators and streaming metrics shared by the speech and text trainers, with their pytest cases.
The trainers run on TPU (torch_xla); these helpers are imported by them."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

BUCKETS = (128, 256, 384, 512)


def bucket_len(n):
    for b in BUCKETS:
        if n <= b:
            return b
    return BUCKETS[-1]


def collate_text(batch, pad_id=0):
    longest = max(len(x["input_ids"]) for x in batch)
    width = bucket_len(longest)  # ok
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)  # ok
    mask = torch.zeros((len(batch), width), dtype=torch.long)  # ok
    for i, x in enumerate(batch):
        n = min(len(x["input_ids"]), width)
        ids[i, :n] = torch.tensor(x["input_ids"][:n])  # ok
        mask[i, :n] = 1  # ok
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([x["label"] for x in batch])}  # ok


def collate_speech(batch):
    feats = [torch.as_tensor(x["features"], dtype=torch.float32) for x in batch]  # ok
    targets = [torch.as_tensor(x["target_ids"]) for x in batch]  # ok
    feats = pad_sequence(feats, batch_first=True)  # expect: TPU308
    targets = pad_sequence(targets, batch_first=True, padding_value=-100)  # expect: TPU308
    feat_lens = torch.tensor([len(x["features"]) for x in batch])  # ok
    return {"features": feats, "feature_lengths": feat_lens, "labels": targets}


class StreamingAccuracy:
    """Accumulates on the device; read once with `compute()`."""

    def __init__(self, device):
        self.correct = torch.zeros((), device=device)  # ok
        self.total = torch.zeros((), device=device)  # ok

    def update(self, logits, labels):
        keep = labels != -100
        pred = logits.argmax(-1)
        self.correct += ((pred == labels) & keep).sum()  # ok
        self.total += keep.sum()  # ok

    def compute(self):
        return (self.correct / self.total.clamp(min=1)).item()  # ok


class StreamingPerplexity:
    def __init__(self):
        self.nll, self.tokens = 0.0, 0

    def update(self, logits, labels):
        keep = labels != -100
        nll = F.cross_entropy(logits[keep], labels[keep], reduction="sum")  # expect: TPU302
        self.nll += nll.item()  # expect: TPU101
        self.tokens += int(keep.sum())  # expect: TPU106

    def compute(self):
        return math.exp(self.nll / max(self.tokens, 1))  # ok


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, n_bins=15):
    conf = probs.max(1)
    pred = probs.argmax(1)
    edges = np.linspace(0, 1, n_bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (conf > lo) & (conf <= hi)
        if sel.any():  # ok
            ece += sel.mean() * abs((pred[sel] == labels[sel]).mean() - conf[sel].mean())  # ok
    return ece


# ---------------------------------------------------------------- tests

def test_collate_text_buckets():
    batch = [{"input_ids": list(range(n)), "label": 1} for n in (5, 130, 17)]
    out = collate_text(batch)
    assert out["input_ids"].shape == (3, 256)  # ok
    assert out["attention_mask"].sum().item() == 152  # ok


def test_collate_speech_pads_labels():
    batch = [{"features": np.ones((n, 80), dtype=np.float32), "target_ids": [1] * n} for n in (3, 7)]
    out = collate_speech(batch)
    assert out["features"].shape == (2, 7, 80)  # ok
    assert (out["labels"][0, 3:] == -100).all()  # ok


@pytest.mark.parametrize("device", ["cpu"])
def test_streaming_accuracy(device):
    m = StreamingAccuracy(device)
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])  # ok
    labels = torch.tensor([0, 1, -100])  # ok
    m.update(logits, labels)
    assert m.compute() == pytest.approx(1.0)  # ok


def test_perplexity_of_uniform():
    m = StreamingPerplexity()
    m.update(torch.zeros(4, 10), torch.tensor([1, 2, 3, -100]))  # ok
    assert m.compute() == pytest.approx(10.0, rel=1e-5)  # ok


def test_ece_perfect():
    probs = np.eye(4)[[0, 1, 2, 3]]
    assert expected_calibration_error(probs, np.arange(4)) == pytest.approx(0.0)  # ok

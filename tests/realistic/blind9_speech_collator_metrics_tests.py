"""Collators and streaming metrics shared by a speech-recognition repo's training and evaluation
scripts (PyTorch/XLA on TPU for training, CPU for unit tests), with the repo's pytest cases for
them at the bottom. The evaluation entry point is used by the TPU job after every epoch."""
import math

import pytest
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

FRAME_BUCKET = 128


def collate_speech(batch):
    feats = [b["features"] for b in batch]
    labels = [b["labels"] for b in batch]
    feat_lens = torch.tensor([f.size(0) for f in feats])  # ok
    padded = pad_sequence(feats, batch_first=True)  # expect: TPU308
    label_pad = pad_sequence(labels, batch_first=True, padding_value=-100)  # expect: TPU308
    return {"features": padded, "feature_lengths": feat_lens, "labels": label_pad}


def collate_speech_bucketed(batch):
    longest = max(b["features"].size(0) for b in batch)
    width = ((longest + FRAME_BUCKET - 1) // FRAME_BUCKET) * FRAME_BUCKET
    feats = torch.zeros(len(batch), width, batch[0]["features"].size(1))
    mask = torch.zeros(len(batch), width, dtype=torch.bool)
    for i, b in enumerate(batch):
        n = b["features"].size(0)
        feats[i, :n] = b["features"]  # ok
        mask[i, :n] = True  # ok
    labels = torch.full((len(batch), 256), -100, dtype=torch.long)
    for i, b in enumerate(batch):
        labels[i, : b["labels"].numel()] = b["labels"]  # ok
    return {"features": feats, "mask": mask, "labels": labels}


class StreamingWER:
    """Word error rate from token ids, accumulated over an evaluation."""

    def __init__(self, tokenizer):
        self.tokenizer, self.errors, self.words = tokenizer, 0, 0

    def update(self, pred_ids, label_ids):
        preds = self.tokenizer.batch_decode(pred_ids.tolist(), skip_special_tokens=True)  # debatable (decoding needs host ids)
        label_ids = label_ids.masked_fill(label_ids == -100, self.tokenizer.pad_token_id)  # ok
        refs = self.tokenizer.batch_decode(label_ids.tolist(), skip_special_tokens=True)  # debatable (decoding needs host ids)
        for p, r in zip(preds, refs):
            self.errors += edit_distance(p.split(), r.split())
            self.words += len(r.split())

    def compute(self):
        return self.errors / max(self.words, 1)


class StreamingTokenAccuracy:
    def __init__(self, device):
        self.correct = torch.zeros((), device=device)
        self.total = torch.zeros((), device=device)

    def update(self, logits, labels):
        keep = labels != -100
        self.correct += ((logits.argmax(-1) == labels) & keep).sum()  # ok
        self.total += keep.sum()  # ok

    def compute(self):
        return (self.correct / self.total.clamp(min=1)).item()  # ok


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(b) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[-1]


@torch.no_grad()
def evaluate(model, dataset, tokenizer, batch_size=32):
    device = torch_xla.device()
    loader = DataLoader(dataset, batch_size=batch_size, collate_fn=collate_speech_bucketed, drop_last=False)  # ok
    acc, wer = StreamingTokenAccuracy(device), StreamingWER(tokenizer)
    total_loss = 0.0
    for batch in pl.MpDeviceLoader(loader, device):
        logits = model(batch["features"], batch["mask"])
        loss = F.cross_entropy(logits.transpose(1, 2), batch["labels"], ignore_index=-100)  # ok
        total_loss += loss.item()  # expect: TPU101
        acc.update(logits, batch["labels"])
        wer.update(logits.argmax(-1), batch["labels"])
    return {"loss": total_loss / len(loader), "token_acc": acc.compute(), "wer": wer.compute(), "ppl": math.exp(total_loss / len(loader))}


# --------------------------------------------------------------------------- tests


def _item(n, dim=80):
    return {"features": torch.randn(n, dim), "labels": torch.randint(0, 100, (n // 4,))}  # ok


def test_collate_pads_to_longest():
    out = collate_speech([_item(37), _item(50)])
    assert out["features"].shape == (2, 50, 80)  # ok
    assert out["feature_lengths"].tolist() == [37, 50]  # ok


def test_bucketed_collate_rounds_up():
    out = collate_speech_bucketed([_item(37), _item(200)])
    assert out["features"].shape[1] == 256  # ok
    assert bool(out["mask"][0, 36]) and not bool(out["mask"][0, 37])  # ok
    assert torch.equal(out["labels"][0, 9:], torch.full((247,), -100))  # ok


def test_token_accuracy_ignores_padding():
    m = StreamingTokenAccuracy("cpu")
    logits = F.one_hot(torch.tensor([[1, 2, 3]]), 4).float()
    m.update(logits, torch.tensor([[1, 0, -100]]))
    assert m.compute() == pytest.approx(0.5)  # ok


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_token_accuracy_on_gpu():
    m = StreamingTokenAccuracy("cuda")  # ok
    logits = torch.randn(4, 10, 32).cuda()  # ok
    labels = torch.randint(0, 32, (4, 10)).cuda()  # ok
    m.update(logits, labels)
    assert 0.0 <= m.compute() <= 1.0  # ok


def test_edit_distance():
    assert edit_distance("a b c".split(), "a c".split()) == 1  # ok

"""Unit tests for the model; they run on the CPU, once, so host syncs are fine here."""

import torch

from cuda_port.model import TinyViT, label_smoothing_loss


def test_forward_shape():
    model = TinyViT(num_classes=10)
    logits = model(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2, 10)


def test_loss_is_finite():
    model = TinyViT()
    for _ in range(3):
        loss = label_smoothing_loss(model(torch.randn(4, 3, 32, 32)), torch.tensor([0, 1, 2, 3]))
        assert torch.isfinite(loss).item()

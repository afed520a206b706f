"""A small vision transformer for 32x32 images, written for a single GPU."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbedding(nn.Module):
    def __init__(self, patch_size: int = 4, channels: int = 3, dim: int = 192):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        patches = self.proj(images)
        return patches.flatten(2).transpose(1, 2)


class TokenDropout(nn.Module):
    """Drops low-importance tokens at inference time to save compute."""

    def __init__(self, threshold: float = 0.1):
        super().__init__()
        self.threshold = threshold

    def forward(self, tokens: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        keep = scores > self.threshold
        # The number of kept tokens depends on the data: a new shape (and program) per batch.
        return tokens[keep]


class TinyViT(nn.Module):
    def __init__(self, num_classes: int = 10, dim: int = 192, depth: int = 6, heads: int = 3):
        super().__init__()
        self.embed = PatchEmbedding(dim=dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.positions = nn.Parameter(torch.randn(1, 65, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(images)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1) + self.positions
        # A CPU tensor created inside forward meets the activations on the accelerator.
        scale = torch.tensor(tokens.shape[-1] ** -0.5)
        tokens = self.encoder(tokens * scale)
        return self.head(self.norm(tokens[:, 0]))


def label_smoothing_loss(logits: torch.Tensor, targets: torch.Tensor, smoothing: float = 0.1):
    confidence = 1.0 - smoothing
    log_probs = F.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(dim=-1, index=targets.unsqueeze(1)).squeeze(1)
    smooth = -log_probs.mean(dim=-1)
    return (confidence * nll + smoothing * smooth).mean()

"""A Vision Transformer with interpolated position embeddings and token dropping."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, img_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12, num_classes=1000, keep_rate=0.7):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, embed_dim))
        self.register_buffer("scale", torch.tensor(embed_dim ** -0.5))  # ok
        layer = nn.TransformerEncoderLayer(embed_dim, num_heads, 4 * embed_dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        self.keep_rate = keep_rate

    def interpolate_pos_encoding(self, x, h, w):
        n = x.shape[1] - 1
        n0 = self.pos_embed.shape[1] - 1
        if n == n0:
            return self.pos_embed
        cls_pos, patch_pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        side = int(math.sqrt(n0))
        patch_pos = patch_pos.reshape(1, side, side, -1).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(h, w), mode="bicubic", align_corners=False)  # expect: TPU202
        return torch.cat([cls_pos, patch_pos.permute(0, 2, 3, 1).flatten(1, 2)], dim=1)

    def drop_tokens(self, x, scores):
        keep = scores > scores.quantile(1 - self.keep_rate, dim=-1, keepdim=True)  # ok
        return x[keep].reshape(x.size(0), -1, x.size(-1))  # expect: TPU302

    def forward(self, images):
        b, _, H, W = images.shape
        x = self.patch_embed(images)
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1)
        x = x + self.interpolate_pos_encoding(x, H // 16, W // 16)
        positions = torch.arange(x.shape[1])  # expect: TPU405
        x = x + 0.0 * positions[None, :, None]
        x = self.blocks(x)
        if self.training:
            scores = x[:, 1:].norm(dim=-1)
            x = torch.cat([x[:, :1], self.drop_tokens(x[:, 1:], scores)], dim=1)
        x = self.norm(x) * self.scale * math.sqrt(x.shape[-1])  # ok
        return self.head(x[:, 0])

"""UNet building blocks in the style of diffusers' models/unets."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm


class Upsample2D(nn.Module):
    def __init__(self, channels, use_conv=True, interpolate_mode="nearest"):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1) if use_conv else None
        self.interpolate_mode = interpolate_mode

    def forward(self, hidden_states, output_size=None):
        dtype = hidden_states.dtype
        if dtype == torch.bfloat16:
            hidden_states = hidden_states.to(torch.float32)  # ok
        if output_size is None:
            hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")  # ok
        else:
            hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")  # ok
        if dtype == torch.bfloat16:
            hidden_states = hidden_states.to(dtype)
        return self.conv(hidden_states) if self.conv is not None else hidden_states


class Upsample1D(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = weight_norm(nn.Conv1d(channels, channels, 3, padding=1))  # expect: TPU210

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2.0, mode="linear")  # expect: TPU202
        return self.conv(x)


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels=512, groups=32, eps=1e-6):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels, eps=eps)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels, eps=eps)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        out = self.shortcut(x) + h
        if out.dtype == torch.float16 and torch.isinf(out).any():  # ok
            out = out.clamp(-65504, 65504)
        return out


def get_timestep_embedding(timesteps, embedding_dim, max_period=10000):
    half = embedding_dim // 2
    exponent = -torch.log(torch.tensor(float(max_period))) * torch.arange(half, dtype=torch.float32, device=timesteps.device) / half  # ok
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)

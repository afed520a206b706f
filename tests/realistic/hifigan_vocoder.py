"""A HiFi-GAN style vocoder generator and its multi-resolution STFT loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import remove_weight_norm, weight_norm


class ResBlock(nn.Module):
    def __init__(self, channels, kernel_size=3, dilations=(1, 3, 5)):
        super().__init__()
        self.convs = nn.ModuleList(
            [weight_norm(nn.Conv1d(channels, channels, kernel_size, dilation=d, padding=d)) for d in dilations]  # expect: TPU210
        )

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return x

    def remove_weight_norm(self):
        for conv in self.convs:
            remove_weight_norm(conv)  # ok


class Generator(nn.Module):
    def __init__(self, in_channels=80, upsample_rates=(8, 8, 2, 2), channels=512):
        super().__init__()
        self.pre = nn.Conv1d(in_channels, channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.blocks = nn.ModuleList()
        for i, rate in enumerate(upsample_rates):
            c = channels // (2 ** (i + 1))
            self.ups.append(nn.ConvTranspose1d(c * 2, c, rate * 2, rate, padding=rate // 2))
            self.blocks.append(ResBlock(c))
        self.post = nn.Conv1d(c, 1, 7, padding=3)

    def forward(self, mel, frames=None):
        if frames is not None:
            mel = upsample_conditioning(mel, frames)
        x = self.pre(mel)
        for up, block in zip(self.ups, self.blocks):
            x = block(up(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.post(F.leaky_relu(x)))


def stft_magnitude(x, fft_size, hop, win):
    spec = torch.stft(x, fft_size, hop, win, window=torch.hann_window(win, device=x.device), return_complex=True)  # expect: TPU204
    return spec.abs().clamp(min=1e-7)


def multi_resolution_stft_loss(fake, real, resolutions=((1024, 120, 600), (2048, 240, 1200), (512, 50, 240))):
    loss = 0.0
    for fft_size, hop, win in resolutions:
        f, r = stft_magnitude(fake.squeeze(1), fft_size, hop, win), stft_magnitude(real.squeeze(1), fft_size, hop, win)
        loss = loss + (r - f).norm(p="fro") / r.norm(p="fro") + F.l1_loss(f.log(), r.log())
    return loss / len(resolutions)


def upsample_conditioning(cond, length):
    return F.interpolate(cond, size=length, mode="nearest")  # expect: TPU202


def train_step(generator, discriminator, optimizer, mel, audio):
    fake = generator(mel)
    loss = multi_resolution_stft_loss(fake, audio) + discriminator(fake).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss

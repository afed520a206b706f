"""Text-to-speech inference: a FastSpeech-style acoustic model (duration predictor and length
regulator) followed by a HiFi-GAN vocoder, served on a TPU with torch_xla. Writes one wav per line."""
import argparse
import os

import numpy as np
import soundfile as sf
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla
import torch_xla.core.xla_model as xm

SAMPLE_RATE, HOP = 22050, 256
torch.backends.cudnn.benchmark = True  # ok


class ResBlock(nn.Module):
    def __init__(self, channels, dilations=(1, 3, 5)):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.utils.weight_norm(nn.Conv1d(channels, channels, 3, dilation=d, padding=d))  # expect: TPU210
            for d in dilations
        ])

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return x


class Vocoder(nn.Module):
    def __init__(self, mel_channels=80, channels=256):
        super().__init__()
        self.pre = nn.Conv1d(mel_channels, channels, 7, padding=3)
        self.ups = nn.ModuleList([nn.ConvTranspose1d(channels // 2 ** i, channels // 2 ** (i + 1), 16, 8, padding=4) for i in range(2)])
        self.blocks = nn.ModuleList([ResBlock(channels // 2 ** (i + 1)) for i in range(2)])
        self.post = nn.Conv1d(channels // 4, 1, 7, padding=3)

    def forward(self, mel):
        x = self.pre(mel)
        for up, block in zip(self.ups, self.blocks):
            x = block(up(F.leaky_relu(x, 0.1)))
        x = F.interpolate(x, scale_factor=4, mode="nearest")  # expect: TPU202
        return torch.tanh(self.post(x)).squeeze(1)


class AcousticModel(nn.Module):
    def __init__(self, vocab=148, dim=256, mel_channels=80):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 1024, batch_first=True), 4)
        self.duration = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))
        self.decoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 1024, batch_first=True), 4)
        self.to_mel = nn.Linear(dim, mel_channels)

    def forward(self, phonemes, speed=1.0):
        h = self.encoder(self.embed(phonemes))
        log_dur = self.duration(h).squeeze(-1)
        durations = torch.clamp(torch.round(torch.exp(log_dur) / speed), min=1).long()
        frames = torch.repeat_interleave(h[0], durations[0], dim=0)  # expect: TPU305
        if frames.size(0) > 4000:  # expect: TPUxxx
            frames = frames[:4000]
        return self.to_mel(self.decoder(frames[None])).transpose(1, 2)


def griffin_lim_preview(mel_basis_pinv, mel, n_iter=32):
    spec = torch.clamp(mel_basis_pinv @ mel.exp(), min=1e-5)
    angles = torch.rand_like(spec)  # ok
    for _ in range(n_iter):
        wav = torch.istft(spec * angles, n_fft=1024, hop_length=HOP)  # expect: TPU204
        angles = torch.stft(wav, n_fft=1024, hop_length=HOP, return_complex=True)  # expect: TPU204
        angles = angles / angles.abs().clamp(min=1e-8)
    return wav


def main(args):
    device = torch_xla.device()
    acoustic = AcousticModel().to(device).eval()
    vocoder = Vocoder().to(device).eval()
    acoustic.load_state_dict(torch.load(args.acoustic, map_location="cpu"))  # ok
    vocoder.load_state_dict(torch.load(args.vocoder, map_location="cpu"))  # ok
    symbols = {s: i for i, s in enumerate(open(args.symbols).read().split())}
    os.makedirs(args.out_dir, exist_ok=True)
    with torch.no_grad():
        for n, line in enumerate(open(args.text)):
            ids = torch.tensor([[symbols[p] for p in line.split() if p in symbols]], device=device)  # ok
            mel = acoustic(ids, speed=args.speed)
            wav = vocoder(mel)
            torch_xla.sync()
            audio = wav[0].cpu().numpy()  # ok
            sf.write(os.path.join(args.out_dir, f"{n:05d}.wav"), np.clip(audio, -1, 1), SAMPLE_RATE)  # ok
    print(f"wrote {n + 1} files; compile/exec metrics: {xm.get_memory_info(device)}")  # ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for flag in ("--acoustic", "--vocoder", "--symbols", "--text", "--out-dir"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--speed", type=float, default=1.0)
    main(parser.parse_args())

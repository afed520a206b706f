"""VQ-VAE with an EMA codebook and dead-code restarts, trained on 128x128 image crops with torch_xla."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.utils import save_image

import torch_xla
import torch_xla.core.xla_model as xm


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes=1024, dim=64, decay=0.99, beta=0.25):
        super().__init__()
        self.num_codes, self.dim, self.decay, self.beta = num_codes, dim, decay, beta
        self.register_buffer("codebook", torch.randn(num_codes, dim))  # ok
        self.register_buffer("ema_count", torch.zeros(num_codes))  # ok
        self.register_buffer("ema_sum", self.codebook.clone())

    def forward(self, z):
        flat = z.permute(0, 2, 3, 1).reshape(-1, self.dim)
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.codebook.t() + self.codebook.pow(2).sum(1)  # ok
        codes = dist.argmin(dim=1)
        quant = F.embedding(codes, self.codebook).view(z.size(0), z.size(2), z.size(3), self.dim).permute(0, 3, 1, 2)
        if self.training:
            with torch.no_grad():
                onehot = F.one_hot(codes, self.num_codes).type(flat.dtype)  # ok
                self.ema_count.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
                self.ema_sum.mul_(self.decay).add_(onehot.t() @ flat, alpha=1 - self.decay)
                n = self.ema_count.sum()
                count = (self.ema_count + 1e-5) / (n + self.num_codes * 1e-5) * n
                self.codebook.copy_(self.ema_sum / count.unsqueeze(1))
                self.restart_dead_codes(flat)
        usage = torch.bincount(codes, minlength=self.num_codes)  # expect: TPU304
        probs = usage.float() / codes.numel()
        perplexity = torch.exp(-(probs * torch.log(probs + 1e-10)).sum())  # ok
        commit = self.beta * F.mse_loss(z, quant.detach())
        return z + (quant - z).detach(), commit, perplexity

    def restart_dead_codes(self, flat):
        dead = self.ema_count < 1e-3
        if dead.any():  # expect: TPU107
            idx = torch.randint(0, flat.size(0), (self.num_codes,), device=flat.device)  # ok
            self.codebook[dead] = flat[idx][dead]  # expect: TPU302
            self.ema_count[dead] = 1.0  # expect: TPU302


def block(cin, cout, up=False):
    layers = [nn.Upsample(scale_factor=2, mode="bicubic")] if up else []  # expect: TPU202
    layers += [nn.Conv2d(cin, cout, 3, padding=1, stride=1 if up else 2), nn.GroupNorm(8, cout), nn.SiLU()]
    return nn.Sequential(*layers)


class VQVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(block(3, 64), block(64, 128), nn.Conv2d(128, 64, 1))
        self.vq = VectorQuantizer()
        self.decoder = nn.Sequential(block(64, 128, up=True), block(128, 64, up=True), nn.Conv2d(64, 3, 3, padding=1))

    def forward(self, x):
        quant, commit, perplexity = self.vq(self.encoder(x))
        return self.decoder(quant), commit, perplexity


def main(args):
    device = torch_xla.device()
    model = VQVAE()
    if args.init:
        model.load_state_dict(torch.load(args.init))  # expect: TPU406
    model = model.to(device)
    tf = T.Compose([T.RandomResizedCrop(128), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
    loader = DataLoader(ImageFolder(args.data, tf), batch_size=128, shuffle=True, num_workers=8, drop_last=True)  # ok
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    for epoch in range(args.epochs):
        for images, _ in loader:  # expect: TPU607
            images = images.to(device)
            recon, commit, perplexity = model(images)
            loss = F.mse_loss(recon, images) + commit
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
        print(f"epoch {epoch}: loss {loss.item():.4f} perplexity {perplexity.item():.1f}")  # ok
        save_image(recon[:64].cpu() * 0.5 + 0.5, f"{args.out}/recon_{epoch}.png")  # ok
    torch.save(model.state_dict(), f"{args.out}/vqvae.pt")  # expect: TPU408


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/data/ffhq")
    parser.add_argument("--out", default="/tmp/vqvae")
    parser.add_argument("--init", default=None)
    parser.add_argument("--epochs", type=int, default=50)
    main(parser.parse_args())

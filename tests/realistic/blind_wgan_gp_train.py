"""WGAN-GP on CelebA 64x64, ported from a GPU notebook to a single TPU core with torch_xla."""
import argparse
import os

import torch
import torch.nn as nn
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils
from torch.utils.data import DataLoader

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def weights_init(m):
    if isinstance(m, nn.Conv2d) or isinstance(m, nn.ConvTranspose2d):
        nn.init.normal_(m.weight, 0.0, 0.02)  # ok


class Generator(nn.Module):
    def __init__(self, nz=128, ngf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Critic(nn.Module):
    def __init__(self, ndf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.utils.weight_norm(nn.Conv2d(3, ndf, 4, 2, 1)), nn.LeakyReLU(0.2, inplace=True),  # expect: TPU210
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1), nn.InstanceNorm2d(ndf * 2, affine=True), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1), nn.InstanceNorm2d(ndf * 4, affine=True), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 8, 1, 0),
        )

    def forward(self, x):
        return self.main(x).view(-1)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)  # expect: TPU405
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(interp)
    grads = torch.autograd.grad(outputs=scores, inputs=interp, grad_outputs=torch.ones_like(scores), create_graph=True)[0]  # ok
    return ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataroot", default="data/celeba")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--nz", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--n_critic", type=int, default=5)
    parser.add_argument("--lambda_gp", type=float, default=10.0)
    parser.add_argument("--outdir", default="samples")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)

    dataset = dset.ImageFolder(root=args.dataroot, transform=transforms.Compose([
        transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    ]))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=4, drop_last=True)  # ok
    device = torch_xla.device()
    netG = Generator(args.nz).to(device)
    netD = Critic().to(device)
    netG.apply(weights_init)
    netD.apply(weights_init)
    optD = torch.optim.Adam(netD.parameters(), lr=1e-4, betas=(0.0, 0.9))
    optG = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.0, 0.9))
    fixed_noise = torch.randn(64, args.nz, 1, 1, device=device)  # ok

    G_losses, D_losses = [], []
    iters = 0
    for epoch in range(args.epochs):
        for i, (real, _) in enumerate(pl.MpDeviceLoader(loader, device)):
            bs = real.size(0)
            noise = torch.randn(bs, args.nz, 1, 1).to(device)  # expect: TPU407
            fake = netG(noise)
            d_real = netD(real).mean()
            d_fake = netD(fake.detach()).mean()
            gp = gradient_penalty(netD, real, fake.detach())
            errD = d_fake - d_real + args.lambda_gp * gp
            optD.zero_grad()
            errD.backward()
            xm.optimizer_step(optD)
            D_losses.append(errD.item())  # expect: TPU101
            if i % args.n_critic == 0:
                errG = -netD(netG(noise)).mean()
                optG.zero_grad()
                errG.backward()
                xm.optimizer_step(optG)
                G_losses.append(errG.detach())  # ok
            if errD < -1000:  # expect: TPU107
                print("critic diverged", errD)  # ok
                break
            xm.mark_step()  # expect: TPU601
            if i % 100 == 0:
                print("[%d/%d][%d/%d] Loss_D: %.4f W-dist: %.4f" % (epoch, args.epochs, i, len(loader), errD.item(), (d_real - d_fake).item()))  # ok
            iters += 1
        with torch.no_grad():
            samples = netG(fixed_noise).cpu()  # ok
        vutils.save_image(samples, os.path.join(args.outdir, f"epoch_{epoch:03d}.png"), normalize=True)
        xm.save({"G": netG.state_dict(), "D": netD.state_dict()}, os.path.join(args.outdir, "last.pt"))  # ok
    torch.save({"G_losses": [float(l) for l in G_losses], "D_losses": D_losses}, os.path.join(args.outdir, "losses.pt"))  # debatable


if __name__ == "__main__":
    main()

"""DCGAN training with a step method per batch; ported from a CUDA notebook to torch_xla."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


class GANTrainer:
    def __init__(self, generator, discriminator, nz=100, lr=2e-4):
        self.device = torch_xla.device()
        self.G = generator.to(self.device)
        self.D = discriminator.to(self.device)
        self.nz = nz
        self.criterion = nn.BCEWithLogitsLoss()
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=lr, betas=(0.5, 0.999))
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=lr, betas=(0.5, 0.999))
        self.fixed_noise = torch.randn(64, nz, 1, 1, device=self.device)  # ok

    def step(self, real):
        b = real.size(0)
        real_label = torch.ones(b, device=self.device)  # ok
        fake_label = torch.zeros(b, device=self.device)  # ok
        noise = torch.randn(b, self.nz, 1, 1, device=self.device)
        fake = self.G(noise)

        self.opt_d.zero_grad()
        d_loss = self.criterion(self.D(real).view(-1), real_label) + self.criterion(self.D(fake.detach()).view(-1), fake_label)
        d_loss.backward()
        xm.optimizer_step(self.opt_d)

        self.opt_g.zero_grad()
        g_loss = self.criterion(self.D(fake).view(-1), real_label)
        g_loss.backward()
        if d_loss < 0.3:  # expect: TPU107
            # the discriminator is winning: give the generator an extra step
            xm.optimizer_step(self.opt_g)
        xm.optimizer_step(self.opt_g)
        return float(d_loss), float(g_loss)  # expect: TPU106

    def fit(self, loader, epochs):
        history = []
        device_loader = pl.MpDeviceLoader(loader, self.device)
        for epoch in range(epochs):
            for i, (real, _) in enumerate(device_loader):
                d, g = self.step(real)
                history.append((d, g))  # ok
            with torch.no_grad():
                samples = self.G(self.fixed_noise).cpu()  # ok
            torch.save(samples, f"samples_{epoch}.pt")  # ok
        return history

"""Euler-ancestral sampling for a latent diffusion UNet with classifier-free guidance, on torch_xla."""
import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

import torch_xla


class EulerAncestralScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012):
        betas = torch.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps, dtype=torch.float32) ** 2  # ok
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.all_sigmas = ((1 - alphas_cumprod) / alphas_cumprod) ** 0.5
        self.sigmas = None
        self.timesteps = None

    def set_timesteps(self, num_inference_steps, device):
        timesteps = np.linspace(0, len(self.all_sigmas) - 1, num_inference_steps)[::-1].copy()
        sigmas = np.interp(timesteps, np.arange(len(self.all_sigmas)), self.all_sigmas.numpy())  # ok
        sigmas = np.concatenate([sigmas, [0.0]])
        self.sigmas = torch.from_numpy(sigmas).to(device)  # expect: TPU502
        self.timesteps = torch.from_numpy(timesteps).to(device=device, dtype=torch.float32)  # ok

    def scale_model_input(self, sample, i):
        sigma = self.sigmas[i]  # expect: TPU3xx
        return sample / ((sigma**2 + 1) ** 0.5)

    def step(self, model_output, i, sample, generator=None):
        sigma_from, sigma_to = self.sigmas[i], self.sigmas[i + 1]  # expect: TPU3xx
        sigma_up = (sigma_to**2 * (sigma_from**2 - sigma_to**2) / sigma_from**2) ** 0.5
        sigma_down = (sigma_to**2 - sigma_up**2) ** 0.5
        derivative = model_output  # epsilon prediction: (sample - x0) / sigma
        prev_sample = sample + derivative * (sigma_down - sigma_from)
        noise = torch.randn(sample.shape, generator=generator, device=sample.device, dtype=sample.dtype)  # expect: TPU207
        return prev_sample + noise * sigma_up


@torch.no_grad()
def sample(unet, scheduler, text_emb, uncond_emb, steps=30, guidance=7.5, seed=0):
    device = text_emb.device
    g = torch.Generator(device="cpu").manual_seed(seed)  # ok
    latents = torch.randn((text_emb.size(0), 4, 64, 64), generator=g).to(device)  # ok
    scheduler.set_timesteps(steps, device)
    latents = latents * scheduler.sigmas[0]  # ok
    cond = torch.cat([uncond_emb, text_emb])  # ok
    progress = tqdm(scheduler.timesteps)
    for i, t in enumerate(progress):
        latent_in = scheduler.scale_model_input(torch.cat([latents] * 2), i)  # ok
        noise_pred = unet(latent_in, t, encoder_hidden_states=cond).sample
        noise_uncond, noise_text = noise_pred.chunk(2)
        noise_pred = noise_uncond + guidance * (noise_text - noise_uncond)
        latents = scheduler.step(noise_pred, i, latents, generator=g)
        torch_xla.sync()
        progress.set_postfix(latent_std=latents.std())  # expect: TPU105
        if torch.isnan(latents).any():  # expect: TPU107
            raise FloatingPointError(f"NaN latents at step {i}")
    return latents


def upscale_latents(latents, factor=2):
    return F.interpolate(latents, scale_factor=factor, mode="bicubic", align_corners=False)  # expect: TPU202


def upscale_latents_fast(latents, factor=2):
    return F.interpolate(latents, scale_factor=factor, mode="nearest")  # ok


@torch.no_grad()
def decode(vae, latents):
    image = vae.decode(latents / 0.18215).sample
    image = (image / 2 + 0.5).clamp(0, 1)
    return image.cpu().permute(0, 2, 3, 1).float().numpy()  # ok

"""Noise schedules for a DDPM scheduler: built once on the host, moved to the device in set_timesteps."""
import math

import numpy as np
import torch


def betas_for_alpha_bar(num_steps, max_beta=0.999):
    def alpha_bar(t):
        return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2

    betas = [min(1 - alpha_bar((i + 1) / num_steps) / alpha_bar(i / num_steps), max_beta) for i in range(num_steps)]
    return torch.tensor(betas, dtype=torch.float32)  # ok


class DDPMScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=1e-4, beta_end=0.02, schedule="linear"):
        if schedule == "linear":
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps)  # ok
        elif schedule == "scaled_linear":
            self.betas = torch.linspace(beta_start ** 0.5, beta_end ** 0.5, num_train_timesteps, dtype=torch.float32) ** 2  # ok
        else:
            self.betas = betas_for_alpha_bar(num_train_timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)  # ok
        self.num_train_timesteps = num_train_timesteps
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy())  # ok
        sigmas = np.array(((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5)
        self.sigmas = torch.from_numpy(sigmas).float()  # ok

    def set_timesteps(self, num_inference_steps, device=None):
        step_ratio = self.num_train_timesteps // num_inference_steps
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
        self.timesteps = torch.from_numpy(timesteps).to(device)  # ok
        karras = np.linspace(0, 1, num_inference_steps)
        self.karras_sigmas = torch.from_numpy(karras).to(device)  # expect: TPU502
        self.alphas_cumprod = self.alphas_cumprod.to(device)

    def step(self, model_output, timestep, sample):
        t = timestep
        prev_t = t - self.num_train_timesteps // len(self.timesteps)
        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else torch.tensor(1.0)  # expect: TPU107
        beta_prod_t = 1 - alpha_prod_t
        pred_original = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
        coef = (alpha_prod_prev ** 0.5 * self.betas[t].to(sample.device)) / beta_prod_t
        return coef * pred_original + (1 - coef) * sample

"""A k-diffusion style Euler / Euler-ancestral sampler for a latent diffusion model, served from a
TorchTPU v6e host: schedule precomputed with NumPy like the diffusers EulerDiscreteScheduler,
classifier-free guidance, the UNet compiled once with torch.compile(backend="tpu")."""
import numpy as np
import torch
from diffusers import AutoencoderKL, UNet2DConditionModel
from transformers import CLIPTextModel, CLIPTokenizer


class EulerSchedule:
    def __init__(self, num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012):
        betas = np.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps) ** 2
        self.alphas_cumprod = np.cumprod(1.0 - betas)
        self.num_train_timesteps = num_train_timesteps

    def set_timesteps(self, n, device):
        timesteps = np.linspace(0, self.num_train_timesteps - 1, n)[::-1].copy()
        sigmas = ((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5
        sigmas = np.interp(timesteps, np.arange(len(sigmas)), sigmas)
        sigmas = np.concatenate([sigmas, [0.0]])
        self.sigmas = torch.from_numpy(sigmas).to(device=device)  # expect: TPU502
        self.timesteps = torch.from_numpy(timesteps).to(device=device, dtype=torch.float32)  # ok


class Text2Image:
    def __init__(self, repo, device):
        self.device = device
        self.tokenizer = CLIPTokenizer.from_pretrained(repo, subfolder="tokenizer")
        self.text_encoder = CLIPTextModel.from_pretrained(repo, subfolder="text_encoder", torch_dtype=torch.bfloat16).to(device)
        self.vae = AutoencoderKL.from_pretrained(repo, subfolder="vae", torch_dtype=torch.bfloat16).to(device)
        unet = UNet2DConditionModel.from_pretrained(repo, subfolder="unet", torch_dtype=torch.bfloat16).to(device)
        self.unet = torch.compile(unet, backend="tpu", fullgraph=True)  # expect: TPU604
        self.schedule = EulerSchedule()

    def encode_prompt(self, prompts):
        ids = self.tokenizer(prompts, padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids  # ok
        uncond = self.tokenizer([""] * len(prompts), padding="max_length", max_length=77, return_tensors="pt").input_ids  # ok
        emb = self.text_encoder(torch.cat([uncond, ids]).to(self.device))[0]
        return emb

    @torch.inference_mode()  # expect: TPU609
    def __call__(self, prompts, steps=30, guidance=7.5, ancestral=False, seed=0):
        emb = self.encode_prompt(prompts)
        self.schedule.set_timesteps(steps, self.device)
        sigmas, timesteps = self.schedule.sigmas, self.schedule.timesteps
        g = torch.Generator().manual_seed(seed)
        latents = torch.randn((len(prompts), 4, 64, 64), generator=g).to(self.device)  # debatable (a host generator keeps images reproducible across backends)
        latents = latents * sigmas[0]  # ok
        for i in range(steps):
            sigma = sigmas[i]  # expect: TPU310
            x_in = torch.cat([latents] * 2) / ((sigma**2 + 1) ** 0.5)
            eps = self.unet(x_in.to(torch.bfloat16), timesteps[i], encoder_hidden_states=emb).sample  # expect: TPU310
            eps_u, eps_c = eps.float().chunk(2)
            denoised = latents - sigma * (eps_u + guidance * (eps_c - eps_u))
            if torch.isnan(denoised).any():  # expect: TPU107
                raise FloatingPointError(f"NaN at step {i}")
            d = (latents - denoised) / sigma
            if ancestral:
                sigma_next = sigmas[i + 1]  # expect: TPU310
                sigma_up = (sigma_next**2 * (sigma**2 - sigma_next**2) / sigma**2) ** 0.5
                sigma_down = (sigma_next**2 - sigma_up**2) ** 0.5
                latents = latents + d * (sigma_down - sigma) + torch.randn_like(latents) * sigma_up  # ok
            else:
                latents = latents + d * (sigmas[i + 1] - sigma)  # expect: TPU310
        image = self.vae.decode(latents.to(torch.bfloat16) / self.vae.config.scaling_factor).sample
        image = (image / 2 + 0.5).clamp(0, 1)
        return (image.float().cpu().permute(0, 2, 3, 1).numpy() * 255).round().astype("uint8")  # ok


if __name__ == "__main__":
    from PIL import Image

    pipe = Text2Image("stabilityai/stable-diffusion-2-1-base", torch.device("tpu"))
    for k, arr in enumerate(pipe(["an astronaut riding a horse on mars"] * 4, ancestral=True)):
        Image.fromarray(arr).save(f"out_{k}.png")

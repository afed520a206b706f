"""DDIM text-to-image sampling pipeline in the style of diffusers, run on a TPU with torch_xla."""
import argparse

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from tqdm.auto import tqdm
from transformers import CLIPTextModel, CLIPTokenizer

import torch_xla

from unet import UNet2DConditionModel
from vae import AutoencoderKL


class DDIMScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, device=None):
        betas = torch.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps, dtype=torch.float32) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0).to(device)  # ok
        self.final_alpha_cumprod = torch.tensor(1.0, device=device)  # ok
        self.sigmas = ((1 - self.alphas_cumprod) / self.alphas_cumprod).to(torch.float64) ** 0.5  # expect: TPU501
        self.num_train_timesteps = num_train_timesteps
        self.init_noise_sigma = 1.0
        self.device = device

    def set_timesteps(self, num_inference_steps):
        step_ratio = self.num_train_timesteps // num_inference_steps
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
        self.timesteps = torch.from_numpy(timesteps).to(self.device)  # ok
        self.step_ratio = step_ratio

    def step(self, model_output, timestep, sample, eta=0.0):
        prev_timestep = timestep - self.step_ratio
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod  # expect: TPU107
        beta_prod_t = 1 - alpha_prod_t
        pred_original_sample = (sample - beta_prod_t**0.5 * model_output) / alpha_prod_t**0.5
        pred_epsilon = model_output
        variance = (1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)
        std_dev_t = eta * variance**0.5
        direction = (1 - alpha_prod_t_prev - std_dev_t**2) ** 0.5 * pred_epsilon
        prev_sample = alpha_prod_t_prev**0.5 * pred_original_sample + direction
        if eta > 0:  # ok
            noise = torch.randn(model_output.shape).to(model_output.device)  # expect: TPU407
            prev_sample = prev_sample + std_dev_t * noise
        return prev_sample


class TextToImagePipeline:
    def __init__(self, model_dir, device):
        self.device = device
        self.tokenizer = CLIPTokenizer.from_pretrained(model_dir, subfolder="tokenizer")
        self.text_encoder = CLIPTextModel.from_pretrained(model_dir, subfolder="text_encoder", torch_dtype=torch.float16).to(device)  # expect: TPU503
        self.unet = UNet2DConditionModel.from_pretrained(model_dir, subfolder="unet").to(device, dtype=torch.bfloat16)  # ok
        self.vae = AutoencoderKL.from_pretrained(model_dir, subfolder="vae").to(device)
        self.scheduler = DDIMScheduler(device=device)

    def encode_prompt(self, prompts):
        tokens = self.tokenizer(prompts, padding="max_length", max_length=self.tokenizer.model_max_length, truncation=True, return_tensors="pt")  # ok
        uncond = self.tokenizer([""] * len(prompts), padding=True, return_tensors="pt")  # expect: TPU307
        cond_emb = self.text_encoder(tokens.input_ids.to(self.device))[0]
        uncond_emb = self.text_encoder(uncond.input_ids.to(self.device))[0]
        return torch.cat([uncond_emb, cond_emb]).to(torch.bfloat16)  # ok

    @torch.no_grad()
    def __call__(self, prompts, num_inference_steps=50, guidance_scale=7.5, height=512, width=512, seed=0):
        emb = self.encode_prompt(prompts)
        generator = torch.Generator(device=self.device).manual_seed(seed)
        shape = (len(prompts), 4, height // 8, width // 8)
        latents = torch.randn(shape, generator=generator, device=self.device, dtype=torch.bfloat16)  # expect: TPU207
        self.scheduler.set_timesteps(num_inference_steps)
        latents = latents * self.scheduler.init_noise_sigma
        progress = tqdm(self.scheduler.timesteps)
        for t in progress:
            latent_input = torch.cat([latents] * 2)  # ok
            noise_pred = self.unet(latent_input, t, encoder_hidden_states=emb).sample
            noise_uncond, noise_text = noise_pred.chunk(2)
            noise_pred = noise_uncond + guidance_scale * (noise_text - noise_uncond)
            latents = self.scheduler.step(noise_pred, t, latents)
            progress.set_postfix(timestep=int(t))  # expect: TPU106|TPU105
            torch_xla.sync()
        image = self.vae.decode(latents.float() / 0.18215).sample
        image = F.interpolate(image, scale_factor=2, mode="bicubic", align_corners=False)  # expect: TPU202
        image = (image / 2 + 0.5).clamp(0, 1)
        return image.cpu().permute(0, 2, 3, 1).numpy()  # ok


def save_images(images, prefix):
    for i, arr in enumerate(images):
        Image.fromarray((arr * 255).round().astype("uint8")).save(f"{prefix}_{i}.png")  # ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", default="stable-diffusion-v1-5")
    parser.add_argument("--prompt", action="append", default=[])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    device = torch_xla.device()
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True  # ok
    pipe = TextToImagePipeline(args.model_dir, device)
    images = pipe(args.prompt or ["a photograph of an astronaut riding a horse"], num_inference_steps=args.steps, seed=args.seed)
    save_images(images, "sample")


if __name__ == "__main__":
    main()

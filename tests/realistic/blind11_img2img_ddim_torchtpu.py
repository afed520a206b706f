"""Image-to-image with a DDIM sampler, diffusers-style, on a TorchTPU host.

The pipeline mirrors StableDiffusionImg2ImgPipeline: encode the init image with the VAE, noise it
to the strength's timestep, denoise with classifier-free guidance. Ported from a CUDA service."""
import numpy as np
import PIL.Image
import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
from transformers import CLIPTextModel, CLIPTokenizer

device = torch.device("tpu")


def preprocess(image: PIL.Image.Image, size=512):
    image = image.convert("RGB").resize((size, size), PIL.Image.LANCZOS)  # ok
    arr = np.asarray(image).astype(np.float32) / 127.5 - 1.0
    return torch.from_numpy(arr).permute(2, 0, 1)[None]  # ok


class Img2ImgPipeline:
    def __init__(self, repo):
        self.tokenizer = CLIPTokenizer.from_pretrained(repo, subfolder="tokenizer")
        self.text_encoder = CLIPTextModel.from_pretrained(repo, subfolder="text_encoder").to(device)
        self.vae = AutoencoderKL.from_pretrained(repo, subfolder="vae", torch_dtype=torch.float16).to(device)  # expect: TPU503
        self.unet = UNet2DConditionModel.from_pretrained(repo, subfolder="unet", torch_dtype=torch.bfloat16).to(device)  # ok
        self.unet = torch.compile(self.unet, backend="tpu", dynamic=False)  # ok
        self.scheduler = DDIMScheduler.from_pretrained(repo, subfolder="scheduler")
        self.vae_scale = 0.18215

    def encode_prompt(self, prompt, negative_prompt=""):
        tok = self.tokenizer([negative_prompt, prompt], padding="max_length", max_length=77, truncation=True, return_tensors="pt")  # ok
        return self.text_encoder(tok.input_ids.to(device))[0].to(torch.bfloat16)

    @torch.no_grad()
    def __call__(self, prompt, image, strength=0.6, steps=50, guidance=7.5, seed=None):
        emb = self.encode_prompt(prompt)
        init = preprocess(image).to(device, torch.float16)  # expect: TPU503
        latents = self.vae.encode(init).latent_dist.sample() * self.vae_scale
        self.scheduler.set_timesteps(steps, device=device)
        start = int(steps * (1 - strength))
        timesteps = self.scheduler.timesteps[start:]
        noise = torch.randn(latents.shape, dtype=latents.dtype, device=device)  # ok
        latents = self.scheduler.add_noise(latents, noise, timesteps[:1])
        for t in timesteps:
            x = torch.cat([latents] * 2).to(torch.bfloat16)
            eps = self.unet(x, t, encoder_hidden_states=emb).sample
            eps_u, eps_c = eps.chunk(2)
            eps = eps_u + guidance * (eps_c - eps_u)
            latents = self.scheduler.step(eps, t, latents.to(eps.dtype)).prev_sample
            print(f"t={int(t)} latent std {latents.std():.3f}")  # expect: TPU103|TPU104, TPU106
        images = self.vae.decode(latents.to(torch.float16) / self.vae_scale).sample  # expect: TPU503
        images = (images / 2 + 0.5).clamp(0, 1)
        images = F.interpolate(images, scale_factor=2, mode="bicubic", align_corners=False)  # debatable (bicubic is unmeasured on TorchTPU)
        arr = (images.float().cpu().permute(0, 2, 3, 1).numpy() * 255).round().astype("uint8")  # ok
        return [PIL.Image.fromarray(a) for a in arr]


if __name__ == "__main__":
    pipe = Img2ImgPipeline("runwayml/stable-diffusion-v1-5")
    out = pipe("a watercolor painting of a lighthouse", PIL.Image.open("photo.jpg"))
    out[0].save("lighthouse.png")

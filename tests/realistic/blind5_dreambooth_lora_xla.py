"""DreamBooth + LoRA fine-tune of Stable Diffusion 1.5's UNet on a few subject photos, ported from
the diffusers CUDA example to one TPU v4 host with torch_xla (frozen VAE and text encoder, EMA)."""
import argparse
import math
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL, DDPMScheduler, StableDiffusionPipeline, UNet2DConditionModel
from diffusers.training_utils import EMAModel
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms
from transformers import CLIPTextModel, CLIPTokenizer

import torch_xla.core.xla_model as xm

PRETRAINED = "runwayml/stable-diffusion-v1-5"


class DreamBoothDataset(Dataset):
    def __init__(self, root, prompt, tokenizer, size=512, repeats=100):
        self.paths = sorted(Path(root).glob("*.jpg"))
        self.repeats = repeats
        self.prompt_ids = tokenizer(
            prompt, padding="max_length", max_length=tokenizer.model_max_length, truncation=True, return_tensors="pt"  # ok
        ).input_ids[0]
        self.tf = transforms.Compose([
            transforms.Resize(size, interpolation=transforms.InterpolationMode.BICUBIC),  # ok
            transforms.CenterCrop(size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize([0.5], [0.5]),
        ])

    def __len__(self):
        return len(self.paths) * self.repeats

    def __getitem__(self, i):
        image = Image.open(self.paths[i % len(self.paths)]).convert("RGB")
        return {"pixel_values": self.tf(image), "input_ids": self.prompt_ids}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--instance_dir", required=True)
    parser.add_argument("--output_dir", default="lora-dreambooth")
    parser.add_argument("--prompt", default="a photo of sks dog")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--rank", type=int, default=4)
    args = parser.parse_args()

    device = xm.xla_device()  # expect: TPU602
    tokenizer = CLIPTokenizer.from_pretrained(PRETRAINED, subfolder="tokenizer")
    text_encoder = CLIPTextModel.from_pretrained(PRETRAINED, subfolder="text_encoder").to(device)
    vae = AutoencoderKL.from_pretrained(PRETRAINED, subfolder="vae", torch_dtype=torch.float16).to(device)  # expect: TPU503
    unet = UNet2DConditionModel.from_pretrained(PRETRAINED, subfolder="unet").to(device)
    noise_scheduler = DDPMScheduler.from_pretrained(PRETRAINED, subfolder="scheduler")
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    unet.requires_grad_(False)
    unet.add_adapter(LoraConfig(r=args.rank, lora_alpha=args.rank, target_modules=["to_k", "to_q", "to_v", "to_out.0"]))
    lora_params = [p for p in unet.parameters() if p.requires_grad]
    ema = EMAModel(lora_params, decay=0.9999)
    optimizer = torch.optim.AdamW(lora_params, lr=1e-4, weight_decay=1e-2)

    dataset = DreamBoothDataset(args.instance_dir, args.prompt, tokenizer)
    loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=4, pin_memory=True)  # expect: TPU306, TPU410

    step = 0
    unet.train()
    while step < args.steps:
        for batch in loader:  # expect: TPU607
            pixels = batch["pixel_values"].to(device)
            input_ids = batch["input_ids"].to(device)
            with torch.no_grad():
                latents = vae.encode(pixels.half()).latent_dist.sample() * vae.config.scaling_factor  # expect: TPU503
                encoder_hidden_states = text_encoder(input_ids)[0]
            latents = latents.float()
            noise = torch.randn_like(latents)  # ok
            timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],))  # expect: TPU405
            noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
            model_pred = unet(noisy_latents, timesteps, encoder_hidden_states).sample
            loss = F.mse_loss(model_pred.float(), noise, reduction="mean")
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(lora_params, 1.0)  # ok
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            xm.mark_step()  # expect: TPU601
            ema.step(lora_params)
            step += 1
            if step % 50 == 0:
                print(f"step {step} loss {loss.item():.4f} grad_norm {grad_norm.item():.3f}")  # ok
            if math.isnan(loss.item()):  # expect: TPU101
                raise RuntimeError(f"loss diverged at step {step}")
            if step >= args.steps:
                break

    ema.copy_to(lora_params)
    os.makedirs(args.output_dir, exist_ok=True)
    lora_state = get_peft_model_state_dict(unet)
    torch.save(lora_state, os.path.join(args.output_dir, "pytorch_lora_weights.bin"))  # expect: TPU408

    pipe = StableDiffusionPipeline.from_pretrained(PRETRAINED, unet=unet, text_encoder=text_encoder, vae=vae)
    pipe = pipe.to(device)
    images = pipe(args.prompt, num_inference_steps=25, num_images_per_prompt=4).images  # ok
    for i, image in enumerate(images):
        image.save(os.path.join(args.output_dir, f"sample_{i}.png"))  # ok


if __name__ == "__main__":
    main()

"""DreamBooth LoRA fine-tuning of Stable Diffusion 1.5 with prior preservation and Min-SNR
weighting, driven by Accelerate (the same script runs on a GPU box and, with `accelerate config`
set to TPU, on a v5e-8). Validation images are generated every few hundred steps."""
import argparse
import math
import os

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from diffusers import AutoencoderKL, DDPMScheduler, DiffusionPipeline, UNet2DConditionModel
from peft import LoraConfig, get_peft_model_state_dict
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import CLIPTextModel, CLIPTokenizer

from dreambooth_data import DreamBoothDataset


def compute_snr(noise_scheduler, timesteps):
    alphas_cumprod = noise_scheduler.alphas_cumprod.to(device=timesteps.device)  # ok
    alpha = alphas_cumprod[timesteps].float() ** 0.5
    sigma = (1.0 - alphas_cumprod[timesteps]).float() ** 0.5
    return (alpha / sigma) ** 2


def collate_fn(examples, with_prior):
    input_ids = [e["instance_prompt_ids"] for e in examples]
    pixels = [e["instance_images"] for e in examples]
    if with_prior:
        input_ids += [e["class_prompt_ids"] for e in examples]
        pixels += [e["class_images"] for e in examples]
    pixels = torch.stack(pixels).to(memory_format=torch.contiguous_format).float()  # ok
    return {"input_ids": torch.cat(input_ids, dim=0), "pixel_values": pixels}


def main(args):
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum, mixed_precision=args.mixed_precision, log_with="tensorboard", project_dir=args.output_dir)
    set_seed(args.seed)
    tokenizer = CLIPTokenizer.from_pretrained(args.model, subfolder="tokenizer")
    noise_scheduler = DDPMScheduler.from_pretrained(args.model, subfolder="scheduler")
    text_encoder = CLIPTextModel.from_pretrained(args.model, subfolder="text_encoder")
    vae = AutoencoderKL.from_pretrained(args.model, subfolder="vae")
    unet = UNet2DConditionModel.from_pretrained(args.model, subfolder="unet")
    for m in (vae, text_encoder, unet):
        m.requires_grad_(False)

    weight_dtype = torch.float32
    if accelerator.mixed_precision == "fp16":
        weight_dtype = torch.float16  # debatable (only when the user configured fp16)
    elif accelerator.mixed_precision == "bf16":
        weight_dtype = torch.bfloat16
    vae.to(accelerator.device, dtype=weight_dtype)
    text_encoder.to(accelerator.device, dtype=weight_dtype)
    unet.to(accelerator.device, dtype=weight_dtype)
    unet.add_adapter(LoraConfig(r=args.rank, lora_alpha=args.rank, target_modules=["to_k", "to_q", "to_v", "to_out.0"]))
    lora_params = [p for p in unet.parameters() if p.requires_grad]

    optimizer = torch.optim.AdamW(lora_params, lr=args.lr, weight_decay=1e-2)
    dataset = DreamBoothDataset(args.instance_dir, args.instance_prompt, tokenizer, class_data_root=args.class_dir, size=512)
    train_dataloader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, collate_fn=lambda ex: collate_fn(ex, True), num_workers=2)  # expect: TPU306
    unet, optimizer, train_dataloader = accelerator.prepare(unet, optimizer, train_dataloader)
    accelerator.init_trackers("dreambooth-lora")

    steps_per_epoch = math.ceil(len(train_dataloader) / args.grad_accum)
    num_epochs = math.ceil(args.max_steps / steps_per_epoch)
    progress_bar = tqdm(range(args.max_steps), disable=not accelerator.is_local_main_process)
    global_step = 0
    for epoch in range(num_epochs):
        unet.train()
        for batch in train_dataloader:
            with accelerator.accumulate(unet):
                latents = vae.encode(batch["pixel_values"].to(dtype=weight_dtype)).latent_dist.sample()
                latents = latents * vae.config.scaling_factor
                noise = torch.randn_like(latents)  # ok
                bsz = latents.shape[0]
                timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (bsz,))  # expect: TPU405
                timesteps = timesteps.long()
                noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
                encoder_hidden_states = text_encoder(batch["input_ids"])[0]
                model_pred = unet(noisy_latents, timesteps, encoder_hidden_states, return_dict=False)[0]

                model_pred, model_pred_prior = torch.chunk(model_pred, 2, dim=0)
                target, target_prior = torch.chunk(noise, 2, dim=0)
                snr = compute_snr(noise_scheduler, timesteps[: target.shape[0]])
                mse_weights = torch.stack([snr, args.snr_gamma * torch.ones_like(snr)], dim=1).min(dim=1)[0] / snr  # ok
                loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
                loss = (loss.mean(dim=list(range(1, loss.ndim))) * mse_weights).mean()
                loss = loss + args.prior_loss_weight * F.mse_loss(model_pred_prior.float(), target_prior.float())

                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(lora_params, 1.0)  # ok
                optimizer.step()
                optimizer.zero_grad()

            if accelerator.sync_gradients:
                progress_bar.update(1)
                global_step += 1
                if global_step % args.checkpointing_steps == 0 and accelerator.is_main_process:
                    accelerator.save_state(os.path.join(args.output_dir, f"checkpoint-{global_step}"))  # ok
            progress_bar.set_postfix(loss=loss.detach().item(), lr=args.lr)  # expect: TPU101|TPU105
            accelerator.log({"train_loss": loss.detach()}, step=global_step)  # expect: TPU104
            if global_step >= args.max_steps:
                break

        if accelerator.is_main_process and epoch % args.validation_epochs == 0:
            pipeline = DiffusionPipeline.from_pretrained(
                args.model, unet=accelerator.unwrap_model(unet), text_encoder=text_encoder, torch_dtype=weight_dtype
            )
            pipeline = pipeline.to(accelerator.device)
            generator = torch.Generator(device=accelerator.device).manual_seed(args.seed)  # ok
            images = [pipeline(args.validation_prompt, num_inference_steps=25, generator=generator).images[0] for _ in range(4)]
            for i, image in enumerate(images):
                image.save(os.path.join(args.output_dir, f"val-{epoch}-{i}.png"))
            del pipeline
            torch.cuda.empty_cache()  # debatable (a no-op off CUDA; freeing a pipeline is what it is for)

    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unet = accelerator.unwrap_model(unet).to(torch.float32)
        lora_state = get_peft_model_state_dict(unet)
        torch.save(lora_state, os.path.join(args.output_dir, "pytorch_lora_weights.bin"))  # ok
    accelerator.end_training()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="runwayml/stable-diffusion-v1-5")
    p.add_argument("--instance_dir", required=True)
    p.add_argument("--class_dir", required=True)
    p.add_argument("--instance_prompt", required=True)
    p.add_argument("--validation_prompt", default="a photo of sks dog in a bucket")
    p.add_argument("--output_dir", default="lora-out")
    p.add_argument("--mixed_precision", default="bf16")
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--grad_accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--rank", type=int, default=4)
    p.add_argument("--snr_gamma", type=float, default=5.0)
    p.add_argument("--prior_loss_weight", type=float, default=1.0)
    p.add_argument("--max_steps", type=int, default=800)
    p.add_argument("--checkpointing_steps", type=int, default=200)
    p.add_argument("--validation_epochs", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    main(p.parse_args())

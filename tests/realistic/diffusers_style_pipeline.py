"""A text-to-image pipeline in the style of diffusers, with the usual optional torch_xla support."""
from typing import List, Optional, Union

import numpy as np
import torch
from tqdm.auto import tqdm

from ..utils import is_torch_xla_available, randn_tensor

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm

    XLA_AVAILABLE = True
else:
    XLA_AVAILABLE = False


def retrieve_timesteps(scheduler, num_inference_steps, device):
    scheduler.set_timesteps(num_inference_steps, device=device)
    return scheduler.timesteps, len(scheduler.timesteps)


class TextToImagePipeline:
    def __init__(self, vae, text_encoder, tokenizer, unet, scheduler):
        self.vae = vae
        self.text_encoder = text_encoder
        self.tokenizer = tokenizer
        self.unet = unet
        self.scheduler = scheduler
        self.vae_scale_factor = 2 ** (len(vae.config.block_out_channels) - 1)

    @property
    def device(self):
        return self.unet.device

    def encode_prompt(self, prompt, device, num_images_per_prompt):
        text_inputs = self.tokenizer(prompt, padding="max_length", max_length=77, truncation=True, return_tensors="pt")  # ok
        prompt_embeds = self.text_encoder(text_inputs.input_ids.to(device))[0]
        return prompt_embeds.repeat_interleave(num_images_per_prompt, dim=0)  # ok

    def prepare_latents(self, batch_size, height, width, dtype, device, generator):
        shape = (batch_size, 4, height // self.vae_scale_factor, width // self.vae_scale_factor)
        latents = randn_tensor(shape, generator=generator, device=device, dtype=dtype)
        return latents * self.scheduler.init_noise_sigma

    @torch.no_grad()
    def __call__(
        self,
        prompt: Union[str, List[str]],
        height: int = 512,
        width: int = 512,
        num_inference_steps: int = 50,
        guidance_scale: float = 7.5,
        num_images_per_prompt: int = 1,
        generator: Optional[torch.Generator] = None,
        output_type: str = "pil",
    ):
        device = self.device
        batch_size = 1 if isinstance(prompt, str) else len(prompt)
        prompt_embeds = self.encode_prompt(prompt, device, num_images_per_prompt)
        negative_embeds = self.encode_prompt([""] * batch_size, device, num_images_per_prompt)
        prompt_embeds = torch.cat([negative_embeds, prompt_embeds])
        timesteps, num_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)
        latents = self.prepare_latents(batch_size * num_images_per_prompt, height, width, prompt_embeds.dtype, device, generator)

        with tqdm(total=num_steps) as progress_bar:
            for i, t in enumerate(timesteps):
                latent_model_input = torch.cat([latents] * 2)
                latent_model_input = self.scheduler.scale_model_input(latent_model_input, t)
                noise_pred = self.unet(latent_model_input, t, encoder_hidden_states=prompt_embeds).sample
                noise_uncond, noise_text = noise_pred.chunk(2)
                noise_pred = noise_uncond + guidance_scale * (noise_text - noise_uncond)
                latents = self.scheduler.step(noise_pred, t, latents).prev_sample
                if torch.isnan(latents).any():  # expect: TPU107
                    raise ValueError(f"NaN latents at step {i}")
                progress_bar.set_postfix(t=t.item())  # expect: TPU101|TPU105
                progress_bar.update()
                if XLA_AVAILABLE:
                    xm.mark_step()  # expect: TPU601

        image = self.vae.decode(latents / self.vae.config.scaling_factor).sample
        image = (image / 2 + 0.5).clamp(0, 1)
        image = image.cpu().permute(0, 2, 3, 1).float().numpy()  # ok
        if output_type == "np":
            return image
        return [self.numpy_to_pil(im) for im in image]

    @staticmethod
    def numpy_to_pil(image):
        from PIL import Image

        return Image.fromarray((image * 255).round().astype(np.uint8))

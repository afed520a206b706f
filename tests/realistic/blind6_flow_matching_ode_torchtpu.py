"""Class-conditional rectified-flow training of a small DiT on ImageNet-64 latents, TorchTPU with
DDP under torchrun, compiled train step, EMA weights, and an adaptive Heun ODE sampler for
previews. Launched with the singlehost wrapper, one process per chip."""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision
from diffusers import AutoencoderKL
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from dit import DiT_S_2

dist.init_process_group(backend="tpu_dist")
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("tpu")
torch.manual_seed(0)  # ok

latents = torch.load("imagenet64_latents.pt", map_location="cpu")  # ok
dataset = TensorDataset(latents["z"], latents["y"])
sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
loader = DataLoader(dataset, batch_size=64, sampler=sampler, num_workers=4)  # expect: TPU306

model = DiT_S_2(in_channels=4, num_classes=1000).to(device)
ema = copy.deepcopy(model).requires_grad_(False)
ddp = DDP(model, device_ids=[int(os.environ["LOCAL_RANK"])])  # expect: TPU702
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0, capturable=True)  # ok
vae = AutoencoderKL.from_pretrained("stabilityai/sd-vae-ft-ema", torch_dtype=torch.float16).to(device)  # expect: TPU503


@torch.compile(backend="tpu", dynamic=False)  # ok
def train_step(x1, y):
    x0 = torch.randn_like(x1)
    t = torch.rand(x1.size(0), device=x1.device)
    tt = t.view(-1, 1, 1, 1)
    xt = (1.0 - tt) * x0 + tt * x1
    drop = torch.rand(y.shape, device=y.device) < 0.1
    y = torch.where(drop, torch.full_like(y, 1000), y)  # ok
    loss = F.mse_loss(ddp(xt, t, y), x1 - x0)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def update_ema(decay=0.9999):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.lerp_(pm, 1.0 - decay)  # ok


@torch.no_grad()
def heun_sample(y, cfg=1.5, tol=1e-3):
    x = torch.randn(y.size(0), 4, 8, 8, device=device)
    null = torch.full_like(y, 1000)
    t, h = 0.0, 0.05
    while t < 1.0:  # ok
        tt = torch.full((x.size(0),), t, device=device)
        v_c, v_u = ema(x, tt, y), ema(x, tt, null)
        k1 = v_u + cfg * (v_c - v_u)
        x_euler = x + h * k1
        v_c, v_u = ema(x_euler, tt + h, y), ema(x_euler, tt + h, null)
        x_heun = x + 0.5 * h * (k1 + v_u + cfg * (v_c - v_u))
        err = (x_heun - x_euler).abs().mean()
        if err > tol:  # expect: TPU107
            h *= 0.5
            continue
        x, t = x_heun, t + h
        h = min(1.5 * h, 1.0 - t) if t < 1.0 else h  # ok
    return x


def main(total_steps=400_000):
    step, losses = 0, []
    while step < total_steps:
        sampler.set_epoch(step)
        for z, y in loader:
            loss = train_step(z.to(device), y.to(device))
            update_ema()
            losses.append(loss)  # ok
            step += 1
            if step % 100 == 0:
                mean_loss = torch.stack(losses).mean().item()  # ok
                losses.clear()
                if rank == 0:
                    print(f"step {step} loss {mean_loss:.4f}")  # ok
            if rank == 0 and step % 10_000 == 0:
                torch.save({"ema": ema.state_dict(), "step": step}, f"ckpt_{step:07d}.pt")  # expect: TPU110
                labels = torch.arange(16, device=device) * 61 % 1000
                imgs = vae.decode(heun_sample(labels).half() / 0.18215).sample  # expect: TPU503, TPU110
                torchvision.utils.save_image(imgs.float().cpu() * 0.5 + 0.5, f"samples_{step:07d}.png")  # expect: TPU110
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

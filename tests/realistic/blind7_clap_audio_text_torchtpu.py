"""CLAP-style contrastive audio-text pretraining: a small HTSAT-like audio tower on log-mel
features, a RoBERTa text tower, symmetric InfoNCE over negatives gathered from every rank.
Ported from an 8xA100 torchrun job to a TorchTPU v5p slice (one process per chip, tpu_dist)."""
import math

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_fn
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
import wandb
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoTokenizer, RobertaModel

from clap_data import AudioCaps, AudioTower

SR, CLIP_SECONDS = 48_000, 10


class CLAP(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.mel = torchaudio.transforms.MelSpectrogram(SR, n_fft=1024, hop_length=480, n_mels=64)  # expect: TPU204
        self.audio = AudioTower(n_mels=64, out_dim=768)
        self.text = RobertaModel.from_pretrained("roberta-base")
        self.audio_proj = nn.Sequential(nn.Linear(768, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.text_proj = nn.Sequential(nn.Linear(768, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))  # ok

    def forward(self, wave, input_ids, attention_mask):
        spec = (self.mel(wave) + 1e-6).log()
        a = F.normalize(self.audio_proj(self.audio(spec)), dim=-1)
        t = self.text(input_ids=input_ids, attention_mask=attention_mask).pooler_output
        t = F.normalize(self.text_proj(t), dim=-1)
        return a, t, self.logit_scale.exp().clamp(max=100.0)  # ok


def clip_loss(a, t, scale, rank):
    all_a = torch.cat(dist_fn.all_gather(a), 0)
    all_t = torch.cat(dist_fn.all_gather(t), 0)
    logits_a = scale * a @ all_t.T
    logits_t = scale * t @ all_a.T
    targets = torch.arange(a.size(0)) + rank * a.size(0)  # expect: TPU405
    return 0.5 * (F.cross_entropy(logits_a, targets) + F.cross_entropy(logits_t, targets))


def main():
    dist.init_process_group("tpu_dist")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")
    torch.manual_seed(1234)

    tokenizer = AutoTokenizer.from_pretrained("roberta-base")
    dataset = AudioCaps("audiocaps/train", sample_rate=SR, seconds=CLIP_SECONDS)
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, drop_last=True)

    def collate(batch):
        waves = torch.stack([b["wave"] for b in batch])  # ok
        text = tokenizer([b["caption"] for b in batch], padding=True, truncation=True, max_length=64, return_tensors="pt")  # expect: TPU307
        return waves, text["input_ids"], text["attention_mask"]

    loader = DataLoader(dataset, batch_size=96, sampler=sampler, collate_fn=collate, num_workers=8, drop_last=True)  # ok
    model = CLAP().to(device)
    ddp = DDP(model, device_ids=[rank % 4], find_unused_parameters=False)  # expect: TPU702
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), weight_decay=0.2)  # expect: TPU608
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-4, total_steps=50_000, pct_start=0.02)

    @torch.compile(backend="tpu")  # expect: TPU604
    def train_step(wave, ids, mask):
        a, t, scale = ddp(wave, ids, mask)
        loss = clip_loss(a, t, scale, rank)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)  # ok
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach(), scale.detach()

    if rank == 0:
        wandb.init(project="clap-tpu", config={"world": world})  # ok
    step = 0
    for epoch in range(30):
        sampler.set_epoch(epoch)
        for wave, ids, mask in loader:
            loss, scale = train_step(wave.to(device), ids.to(device), mask.to(device))
            # A Python-float lr changing every step recompiles the compiled optimizer step.
            sched.step()  # expect: TPUxxx
            step += 1
            if rank == 0 and step % 100 == 0:
                wandb.log({"loss": loss, "logit_scale": scale, "lr": sched.get_last_lr()[0]}, step=step)  # expect: TPU110
        if rank == 0:
            torch.save(model.state_dict(), f"clap_epoch{epoch}.pt")  # expect: TPU110
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Pre-train a small GPT with TorchTPU: DDP over the chips of one host, a compiled train step."""
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

import torch_tpu
from torch_tpu._internal import execution_mode as em  # expect: TPU610

from gpt import GPT, GPTConfig
from shards import TokenShardDataset

BATCH_SIZE = 16
SEQ_LEN = 1024
LOG_EVERY = 10


def setup():
    dist.init_process_group(backend="tpu_dist")  # ok
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.manual_seed(1337)  # ok
    return rank, local_rank, dist.get_world_size()


def cosine_lr(step, warmup, total, max_lr):
    if step < warmup:  # ok
        return max_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 * max_lr + 0.45 * max_lr * (1 + math.cos(math.pi * progress))


def main():
    rank, local_rank, world = setup()
    device = torch.device("tpu")  # ok
    em.eager_mode = em.EagerMode.DEFER_AND_FUSE

    with torch.device(device):
        model = GPT(GPTConfig(n_layer=12, n_head=12, n_embd=768, block_size=SEQ_LEN))  # ok
    model = DDP(model, device_ids=[local_rank])  # expect: TPU702
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)  # expect: TPU608

    def train_step(x, y):
        with torch.autocast("tpu", dtype=torch.bfloat16):  # ok
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    compiled_step = torch.compile(train_step, backend="tpu")  # expect: TPU604

    @torch.inference_mode()  # expect: TPU609
    def eval_step(x, y):
        logits = model(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))

    compiled_eval = torch.compile(eval_step, backend="tpu", dynamic=False)  # ok

    @torch.compile(backend="tpu", dynamic=False)
    def score_step(x):
        with torch.tpu.precision(torch.tpu.Precision.HIGHEST):  # expect: TPU613
            return model(x).float().softmax(-1)

    train_set = TokenShardDataset("data/fineweb", split="train", seq_len=SEQ_LEN)
    val_set = TokenShardDataset("data/fineweb", split="val", seq_len=SEQ_LEN)
    sampler = torch.utils.data.distributed.DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=BATCH_SIZE, sampler=sampler, pin_memory=True, num_workers=4)  # expect: TPU306
    val_loader = DataLoader(val_set, batch_size=BATCH_SIZE, pin_memory=True, drop_last=True)  # ok

    total_steps = 20000
    step = 0
    t0 = time.time()
    for x, y in train_loader:
        x = x.to(device, non_blocking=True)  # ok
        y = y.to(device, non_blocking=True)  # ok
        lr = cosine_lr(step, 700, total_steps, 6e-4)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = compiled_step(x, y)
        print(loss)  # expect: TPU103
        if rank == 0 and step % LOG_EVERY == 0:
            torch.tpu.synchronize()  # debatable
            dt = (time.time() - t0) / LOG_EVERY
            print(f"step {step} loss {loss.item():.4f} lr {lr:.2e} dt {dt * 1000:.0f}ms")  # expect: TPU110
            t0 = time.time()
        if step % 1000 == 0:
            val_loss = torch.zeros((), device=device)  # ok
            for vx, vy in val_loader:
                val_loss += compiled_eval(vx.to(device), vy.to(device))
            val_loss = val_loss / len(val_loader)
            dist.all_reduce(val_loss)  # ok
            val_value = val_loss.item() / world  # ok
            if rank == 0:
                torch.save(model.module.state_dict(), f"ckpt_{step}.pt")  # expect: TPU110
                print(f"step {step} val loss {val_value:.4f}")  # ok
        step += 1
        if step >= total_steps:
            break
    torch.cuda.synchronize()  # expect: TPU404
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

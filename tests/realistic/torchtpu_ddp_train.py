"""Data-parallel training on TorchTPU: one process per chip, launched with torchrun."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from model import GPT, GPTConfig
from data import TokenDataset


def setup():
    dist.init_process_group(backend="tpu_dist")  # ok
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    torch.manual_seed(1234)
    return rank, world_size


def main():
    rank, world_size = setup()
    device = torch.device("tpu")
    model = GPT(GPTConfig(n_layer=12, n_head=12, n_embd=768)).to(device)
    model = DDP(model, device_ids=[rank])  # expect: TPU702
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)  # expect: TPU608
    dataset = TokenDataset("/data/openwebtext/train.bin", block_size=1024)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, drop_last=True, pin_memory=True)  # ok

    @torch.compile(backend="tpu")  # expect: TPU604
    def train_step(x, y):
        logits, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for step, (x, y) in enumerate(loader):
        x = x.to(device, non_blocking=True)  # ok
        y = y.to(device, non_blocking=True)  # ok
        loss = train_step(x, y)
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}")  # expect: TPU110|TPU101
        if step % 1000 == 0 and rank == 0:
            torch.save(model.module.state_dict(), f"ckpt_{step}.pt")  # expect: TPU110
        if step == 20000:
            break

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

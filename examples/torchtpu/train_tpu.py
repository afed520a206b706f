"""Trains TinyViT with TorchTPU: eager by default, the train step compiled for the TPU.

Launch on one host: torchrun --nproc_per_node=$WORLD_SIZE -m torchtpu.train_tpu
"""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

import torch_tpu  # noqa: F401  (registers the "tpu" device on older builds)
from cuda_port.model import TinyViT, label_smoothing_loss


def build(rank: int):
    device = torch.device("tpu")
    with torch.device(device):
        model = TinyViT()
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    return model, optimizer, device


def main():
    dist.init_process_group(backend="tpu_dist")
    rank = int(os.environ["RANK"])
    model, optimizer, device = build(rank)

    @torch.compile(backend="tpu")
    def train_step(images, targets):
        loss = label_smoothing_loss(model(images), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    dataset = datasets.CIFAR10("./data", train=True, download=True, transform=transforms.ToTensor())
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=100, sampler=sampler, drop_last=True)
    for epoch in range(30):
        sampler.set_epoch(epoch)
        for step, (images, targets) in enumerate(loader):
            loss = train_step(images.to(device), targets.to(device))
            if rank == 0 and step % 100 == 0:
                # Only rank 0 materialises the loss: the other ranks run ahead.
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

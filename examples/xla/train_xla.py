"""Trains TinyViT on a TPU VM with PyTorch/XLA (one process per TPU core).

Launch: python -m xla.train_xla --batch-size 128
"""

import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from cuda_port.model import TinyViT, label_smoothing_loss


def train_loop(model, loader, optimizer, device):
    model.train()
    for step, (images, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = label_smoothing_loss(model(images), targets)
        loss.backward()
        xm.optimizer_step(optimizer)
        # Reading the loss every step forces the lazy graph to run and waits for it.
        if loss.item() > 10.0:
            xm.master_print(f"step {step}: loss diverged")
        xm.mark_step()


def evaluate(model, loader):
    model.eval()
    correct = torch.zeros((), device=torch_xla.device())
    total = 0
    with torch.no_grad():
        for images, targets in loader:
            correct += (model(images).argmax(-1) == targets).sum()
            total += targets.shape[0]
    return correct.item() / total


def _mp_fn(index, args):
    device = xm.xla_device()
    torch.manual_seed(0)
    transform = transforms.ToTensor()
    train_set = datasets.CIFAR10(args.data_dir, train=True, download=True, transform=transform)
    test_set = datasets.CIFAR10(args.data_dir, train=False, transform=transform)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=args.batch_size, drop_last=True)

    model = TinyViT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    for epoch in range(args.epochs):
        train_loop(model, train_device_loader, optimizer, device)
        accuracy = evaluate(model, test_device_loader)
        xm.master_print(f"epoch {epoch}: accuracy {accuracy:.3f}")
    xm.save(model.state_dict(), "tinyvit-xla.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="./data")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=30)
    torch_xla.launch(_mp_fn, args=(parser.parse_args(),))

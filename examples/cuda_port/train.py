"""Trains TinyViT on CIFAR-10 on one GPU. This is the script we want to move to TPUs."""

import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from cuda_port.model import TinyViT, label_smoothing_loss

torch.backends.cudnn.benchmark = True


def get_loaders(data_dir: str, batch_size: int):
    transform = transforms.Compose(
        [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor()]
    )
    train_set = datasets.CIFAR10(data_dir, train=True, download=True, transform=transform)
    test_set = datasets.CIFAR10(data_dir, train=False, transform=transforms.ToTensor())
    train_loader = DataLoader(
        train_set, batch_size=batch_size, shuffle=True, num_workers=4, pin_memory=True
    )
    test_loader = DataLoader(test_set, batch_size=250, num_workers=2)
    return train_loader, test_loader


def train_one_epoch(model, loader, optimizer, epoch):
    model.train()
    running_loss = 0.0
    start = time.time()
    for step, (images, targets) in enumerate(loader):
        images, targets = images.cuda(), targets.cuda()
        optimizer.zero_grad(set_to_none=True)
        logits = model(images)
        loss = label_smoothing_loss(logits, targets)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if grad_norm > 100.0:
            print(f"step {step}: exploding gradients ({grad_norm})")
        optimizer.step()
        running_loss += loss.item()
        if step % 50 == 0:
            print(f"epoch {epoch} step {step} loss {running_loss / (step + 1):.4f}")
    torch.cuda.synchronize()
    return running_loss / len(loader), time.time() - start


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        predictions = model(images).argmax(dim=-1)
        correct += (predictions == targets).sum().item()
        total += targets.numel()
    return correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="./data")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--resume", default=None)
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyViT().to("cuda")
    if args.resume:
        model.load_state_dict(torch.load(args.resume))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    train_loader, test_loader = get_loaders(args.data_dir, args.batch_size)

    for epoch in range(args.epochs):
        loss, seconds = train_one_epoch(model, train_loader, optimizer, epoch)
        accuracy = evaluate(model, test_loader, device)
        print(f"epoch {epoch}: loss {loss:.4f} accuracy {accuracy:.3f} ({seconds:.0f}s)")
        print(f"peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
        torch.save(model.state_dict(), f"tinyvit-{epoch}.pt")


if __name__ == "__main__":
    main()

"""Class-incremental Split-CIFAR-100 (10 tasks of 10 classes) with experience replay and a
learning-without-forgetting distillation term, ResNet-18, one TPU chip with torch_xla.
Reports the accuracy matrix and average forgetting."""
import copy
import random

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, Subset
from torchvision import datasets, transforms
from torchvision.models import resnet18

TASKS, PER_TASK = 10, 10


class ReservoirBuffer:
    def __init__(self, capacity, shape):
        self.x = torch.zeros((capacity, *shape))  # ok
        self.y = torch.zeros(capacity, dtype=torch.long)  # ok
        self.capacity, self.seen = capacity, 0

    def add(self, xb, yb):
        for x, y in zip(xb, yb):
            slot = self.seen if self.seen < self.capacity else random.randint(0, self.seen)
            if slot < self.capacity:
                self.x[slot], self.y[slot] = x, y  # ok
            self.seen += 1

    def sample(self, n):
        idx = torch.randint(0, min(self.seen, self.capacity), (n,))  # ok
        return self.x[idx], self.y[idx]


def split(dataset, task):
    classes = set(range(task * PER_TASK, (task + 1) * PER_TASK))
    return Subset(dataset, [i for i, t in enumerate(dataset.targets) if t in classes])  # ok


def accuracy(model, dataset, device, seen_classes):
    loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=500), device)
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)[:, :seen_classes]  # ok
            correct += (logits.argmax(-1) == y).sum()  # ok
            total += y.numel()
    return (correct / total).item()  # ok


def main():
    device = torch_xla.device()
    tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor()])
    train = datasets.CIFAR100("data", train=True, download=True, transform=tf)
    test = datasets.CIFAR100("data", train=False, download=True, transform=transforms.ToTensor())
    model = resnet18(num_classes=TASKS * PER_TASK).to(device)
    buffer = ReservoirBuffer(2000, (3, 32, 32))
    acc = np.zeros((TASKS, TASKS))
    old_model = None

    for task in range(TASKS):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
        loader = DataLoader(split(train, task), batch_size=32, shuffle=True, drop_last=True)  # ok
        seen_mask = torch.zeros(TASKS * PER_TASK, dtype=torch.bool, device=device)  # ok
        for epoch in range(5):
            for x, y in pl.MpDeviceLoader(loader, device):
                new_classes = torch.unique(y)  # expect: TPU304
                seen_mask[new_classes] = True  # debatable (same cause as the unique above)
                if buffer.seen > 0:
                    rx, ry = buffer.sample(32)
                    x, y = torch.cat([x, rx.to(device)]), torch.cat([y, ry.to(device)])  # ok
                logits = model(x)
                logits[:, ~seen_mask] = -1e4  # expect: TPU302
                loss = F.cross_entropy(logits, y)
                if old_model is not None:
                    with torch.no_grad():
                        old = old_model(x)[:, :task * PER_TASK]  # ok
                    loss = loss + F.kl_div(F.log_softmax(logits[:, :task * PER_TASK] / 2.0, -1), F.softmax(old / 2.0, -1), reduction="batchmean") * 4.0  # ok
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                buffer.add(x[:32].detach().cpu(), y[:32].cpu())  # expect: TPU102
                xm.mark_step()  # expect: TPU601
        old_model = copy.deepcopy(model).eval()
        for k in range(task + 1):
            acc[task, k] = accuracy(model, split(test, k), device, (task + 1) * PER_TASK)  # ok
        print(f"after task {task}: mean acc {acc[task, :task + 1].mean():.3f}")  # ok
    forgetting = np.mean([acc[:TASKS - 1, k].max() - acc[TASKS - 1, k] for k in range(TASKS - 1)])  # ok
    print(f"final average accuracy {acc[-1].mean():.3f}, forgetting {forgetting:.3f}")


if __name__ == "__main__":
    main()

"""Multi-process MNIST on a TPU v4-8 with xmp.spawn, adapted from an older torch_xla example."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

SERIAL_EXEC = xmp.MpSerialExecutor()
_PARENT_DEVICE = torch_xla.device()  # expect: TPUxxx


class MNIST(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.bn = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        x = torch.flatten(x, 1)
        x = F.dropout(F.relu(self.fc1(x)), 0.25, self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def get_dataset(root):
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train = datasets.MNIST(root, train=True, download=True, transform=tf)
    test = datasets.MNIST(root, train=False, download=True, transform=tf)
    return train, test


def train_mnist(flags):
    torch.manual_seed(flags.seed)
    train_set, test_set = SERIAL_EXEC.run(lambda: get_dataset(flags.datadir))
    world = xm.xrt_world_size()  # expect: TPU611
    rank = xm.get_ordinal()  # expect: TPU611
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=flags.batch_size, sampler=train_sampler, num_workers=flags.num_workers)  # expect: TPU306
    test_loader = DataLoader(test_set, batch_size=flags.batch_size, shuffle=False, drop_last=True)  # ok

    device = torch_xla.device()  # ok
    model = MNIST().to(device)
    lr = flags.lr * xr.world_size()  # ok
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=flags.momentum)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        model.train()
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            optimizer.step()  # expect: TPU606
            xm.mark_step()  # expect: TPU601
            if xm.is_master_ordinal():
                print(f"[{rank}] epoch {epoch} step {step} loss", loss)  # expect: TPU103
            if step % flags.log_steps == 0:
                xm.add_step_closure(lambda l=loss: print(f"loss {l.item():.4f}"))  # ok

    def test_loop_fn(loader):
        model.eval()
        correct = torch.zeros((), dtype=torch.long, device=device)  # ok
        total = 0
        with torch.no_grad():
            for data, target in loader:
                output = model(data)
                pred = output.max(1, keepdim=True)[1]
                correct += pred.eq(target.view_as(pred)).sum()
                total += data.size(0)
        accuracy = 100.0 * correct.item() / total  # ok
        return xm.mesh_reduce("test_accuracy", accuracy, np.mean)  # ok

    best = 0.0
    for epoch in range(1, flags.num_epochs + 1):
        train_sampler.set_epoch(epoch)
        train_loop_fn(pl.MpDeviceLoader(train_loader, device), epoch)
        accuracy = test_loop_fn(pl.MpDeviceLoader(test_loader, device))
        xm.master_print(f"Epoch {epoch} test accuracy {accuracy:.2f}%")  # ok
        if accuracy > best:  # ok
            best = accuracy
            xm.save(model.state_dict(), os.path.join(flags.logdir, "best.pt"))  # ok
    return best


def _mp_fn(index, flags):
    torch.set_default_dtype(torch.float32)  # ok
    accuracy = train_mnist(flags)
    if accuracy < flags.target_accuracy:  # ok
        print(f"accuracy {accuracy:.2f} is below the target {flags.target_accuracy}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--datadir", default="/tmp/mnist-data")
    parser.add_argument("--logdir", default="/tmp/mnist-logs")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--num_epochs", type=int, default=10)
    parser.add_argument("--num_workers", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--log_steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target_accuracy", type=float, default=98.0)
    FLAGS = parser.parse_args()
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=8, start_method="fork")  # expect: TPU706

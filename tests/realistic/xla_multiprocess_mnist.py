"""MNIST on all TPU cores with PyTorch/XLA multiprocessing (the classic test_train_mp_mnist shape)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class MNIST(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.bn1(x)
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def train_mnist(flags):
    world_size = xm.xrt_world_size()  # expect: TPU611
    rank = xm.get_ordinal()  # expect: TPU611
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_dataset = datasets.MNIST(os.path.join(flags["datadir"], str(rank)), train=True, download=True, transform=transform)
    test_dataset = datasets.MNIST(os.path.join(flags["datadir"], str(rank)), train=False, download=True, transform=transform)
    sampler = DistributedSampler(train_dataset, num_replicas=world_size, rank=rank, shuffle=True)
    train_loader = DataLoader(train_dataset, batch_size=flags["batch_size"], sampler=sampler, drop_last=True, num_workers=4)  # ok
    test_loader = DataLoader(test_dataset, batch_size=flags["batch_size"], shuffle=False, drop_last=True)  # ok

    device = torch_xla.device()
    model = MNIST().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"] * world_size, momentum=0.5)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader):
        model.train()
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)  # ok
            if step % flags["log_steps"] == 0:
                xm.add_step_closure(lambda: print(f"[{rank}] step {step} loss {loss.item():.5f}"))  # ok

    def test_loop_fn(loader):
        model.eval()
        total_samples, correct = 0, 0
        for data, target in loader:
            output = model(data)
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum()  # ok
            total_samples += data.size()[0]
        accuracy = 100.0 * correct.item() / total_samples  # ok
        return xm.mesh_reduce("test_accuracy", accuracy, sum) / world_size

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    for epoch in range(1, flags["num_epochs"] + 1):
        train_loop_fn(train_device_loader)
        accuracy = test_loop_fn(test_device_loader)
        xm.master_print(f"Epoch {epoch} test accuracy {accuracy:.2f}%")  # ok
    xm.save(model.state_dict(), "mnist.pt")  # ok
    return accuracy


def _mp_fn(index, flags):
    torch.set_default_dtype(torch.float32)
    accuracy = train_mnist(flags)
    if flags["target_accuracy"] and accuracy < flags["target_accuracy"]:  # ok
        print(f"accuracy {accuracy} is below target {flags['target_accuracy']}")


if __name__ == "__main__":
    FLAGS = {"datadir": "/tmp/mnist", "batch_size": 128, "lr": 0.01, "num_epochs": 2, "log_steps": 20, "target_accuracy": 98.0}
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=8, start_method="fork")  # expect: TPU706

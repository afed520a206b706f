"""Evaluate the client models of a federated-learning round and their weighted average (FedAvg)
and logit ensemble on a held-out set; calibration (ECE) on the host. Originally a CUDA script,
now run on a TPU VM with torch_xla; the CUDA branches were kept for the lab's GPU boxes."""
import glob
import json

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader

import torch_xla

USE_CUDA = torch.cuda.is_available()
device = torch.device("cuda") if USE_CUDA else torch_xla.device()  # ok
if USE_CUDA:
    torch.backends.cudnn.benchmark = True  # ok
    torch.cuda.set_device(0)  # ok


def load_client(path):
    model = torchvision.models.resnet18(num_classes=100)
    model.load_state_dict(torch.load(path, map_location="cpu")["model"])  # ok
    return model.to(device).eval()


def fedavg(models, sizes):
    total = float(sum(sizes))
    avg = {k: torch.zeros_like(v, dtype=torch.float32) for k, v in models[0].state_dict().items()}  # ok
    for model, n in zip(models, sizes):
        for k, v in model.state_dict().items():
            avg[k] += v.float() * (n / total)  # ok
    merged = torchvision.models.resnet18(num_classes=100).to(device)
    merged.load_state_dict({k: v.to(models[0].state_dict()[k].dtype) for k, v in avg.items()})
    return merged.eval()


def expected_calibration_error(conf, correct, bins=15):
    edges = np.linspace(0.0, 1.0, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        if in_bin.any():  # ok
            ece += in_bin.mean() * abs(correct[in_bin].mean() - conf[in_bin].mean())  # ok
    return float(ece)


@torch.no_grad()
def evaluate(models, loader):
    logits_all, labels_all = [], []
    for images, labels in loader:  # debatable (an evaluation once per round; the device may be CUDA)
        images = images.to(device)
        logits_all.append(torch.stack([m(images) for m in models]))  # ok
        labels_all.append(labels)
        torch_xla.sync()
        if USE_CUDA:
            torch.cuda.synchronize()  # ok
    logits = torch.cat(logits_all, dim=1).cpu()  # ok
    labels = torch.cat(labels_all)
    probs = logits.softmax(-1)
    ensemble = probs.mean(0)
    conf, pred = ensemble.max(-1)
    results = {f"client{i}": (p.argmax(-1) == labels).float().mean().item() for i, p in enumerate(probs[:-1])}  # ok
    results["fedavg"] = (probs[-1].argmax(-1) == labels).float().mean().item()  # ok
    results["ensemble"] = (pred == labels).float().mean().item()  # ok
    results["ece"] = expected_calibration_error(conf.numpy(), (pred == labels).numpy())  # ok
    results["nll"] = F.nll_loss(ensemble.clamp_min(1e-12).log(), labels).item()  # ok
    return results


if __name__ == "__main__":
    paths = sorted(glob.glob("round_042/client_*.pt"))
    clients = [load_client(p) for p in paths]
    sizes = json.load(open("round_042/sizes.json"))
    merged = fedavg(clients, [sizes[p] for p in paths])
    tf = torchvision.transforms.Compose([torchvision.transforms.ToTensor(), torchvision.transforms.Normalize((0.507, 0.487, 0.441), (0.267, 0.256, 0.276))])
    test = torchvision.datasets.CIFAR100("data", train=False, transform=tf, download=True)
    loader = DataLoader(test, batch_size=500, num_workers=4, pin_memory=USE_CUDA)  # ok
    torch.cuda.synchronize()  # expect: TPU404
    print(json.dumps(evaluate(clients + [merged], loader), indent=2))  # ok

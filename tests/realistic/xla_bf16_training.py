"""Mixed-precision fine-tuning on PyTorch/XLA, as commonly written in 2023-era tutorials."""
import os

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506
os.environ.setdefault("PJRT_DEVICE", "TPU")  # ok

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch_xla.amp import autocast


def build_model(vocab_size=32000, dim=1024):
    model = nn.Sequential(nn.Embedding(vocab_size, dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, vocab_size))
    return model


def train(loader, epochs=1):
    device = torch_xla.device()
    model = build_model().to(device)
    model.half()  # expect: TPU503
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for tokens, targets in pl.MpDeviceLoader(loader, device):
            optimizer.zero_grad()
            with autocast(device, dtype=torch.bfloat16):
                logits = model(tokens)
                loss = loss_fn(logits.view(-1, logits.size(-1)), targets.view(-1))
                scaler.scale(loss).backward()  # expect: TPU507
            scaler.step(optimizer)
            scaler.update()
            xm.mark_step()  # expect: TPU601
    return model


def evaluate_perplexity(model, loader):
    device = torch_xla.device()
    total = torch.zeros((), dtype=torch.float64, device=device)  # expect: TPU501
    count = 0
    with torch.no_grad():
        for tokens, targets in pl.MpDeviceLoader(loader, device):
            with torch.autocast("cuda", dtype=torch.float16):  # expect: TPU504
                logits = model(tokens)
            total += nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="sum")
            count += targets.numel()
    return torch.exp(total / count).item()  # ok

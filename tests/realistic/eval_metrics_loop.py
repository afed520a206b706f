"""Evaluation loop with metric accumulation, in the style of many research code bases (torch_xla)."""
import logging

import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from tqdm import tqdm

logger = logging.getLogger(__name__)


@torch.no_grad()
def evaluate(model, loader, criterion):
    device = torch_xla.device()
    model.eval()
    metrics = {}
    losses = []
    all_preds, all_labels = [], []
    pbar = tqdm(pl.MpDeviceLoader(loader, device), desc="eval")
    for step, (images, labels) in enumerate(pbar):
        logits = model(images)
        loss = criterion(logits, labels)
        losses.append(loss.item())  # expect: TPU101
        metrics["loss"] = loss.mean().cpu()  # expect: TPU102
        pbar.set_postfix(loss=loss)  # expect: TPU105
        logger.info("step %d loss %s", step, loss)  # expect: TPU104
        all_preds.append(logits.argmax(-1))  # ok
        all_labels.append(labels)  # ok
    preds = torch.cat(all_preds).cpu().numpy()  # ok
    labels = torch.cat(all_labels).cpu().numpy()  # ok
    accuracy = float((preds == labels).mean())  # ok
    logger.info("eval loss %.4f accuracy %.4f", np.mean(losses), accuracy)  # ok
    return {"loss": float(np.mean(losses)), "accuracy": accuracy}


@torch.no_grad()
def evaluate_retrieval(model, loader, k=10):
    device = torch_xla.device()
    hits = torch.zeros((), device=device)  # ok
    count = 0
    for queries, positives in pl.MpDeviceLoader(loader, device):
        scores = model(queries) @ model(positives).T
        topk = scores.topk(k, dim=-1).indices  # ok
        target = torch.arange(scores.size(0), device=device).unsqueeze(-1)  # ok
        hits += (topk == target).any(dim=-1).sum()  # ok
        count += scores.size(0)
    return hits.item() / count  # ok

"""Evaluate an image classifier checkpoint on a TPU: accuracy, calibration and per-class metrics."""
import argparse
import json
import logging

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import f1_score, roc_auc_score
from torch.utils.data import DataLoader
from tqdm import tqdm

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

from models import build_model
from data import EvalImageDataset

logger = logging.getLogger(__name__)


def expected_calibration_error(confidences, correct, n_bins=15):
    bins = torch.linspace(0, 1, n_bins + 1)
    ece = torch.zeros(1)
    for lo, hi in zip(bins[:-1], bins[1:]):
        in_bin = (confidences > lo) & (confidences <= hi)  # ok
        if in_bin.any():  # ok
            acc_bin = correct[in_bin].float().mean()  # ok
            conf_bin = confidences[in_bin].mean()  # ok
            ece += in_bin.float().mean() * (conf_bin - acc_bin).abs()
    return ece.item()  # ok


def evaluate(model, loader, device, num_classes):
    model.eval()
    total = 0
    correct = 0
    running_loss = 0.0
    all_preds, all_labels, all_scores = [], [], []
    conf_chunks, correct_chunks = [], []
    class_hits = torch.zeros(num_classes, device=device)  # ok
    pbar = tqdm(pl.MpDeviceLoader(loader, device), total=len(loader))
    with torch.no_grad():
        for i, (images, labels) in enumerate(pbar):
            logits = model(images)
            loss = F.cross_entropy(logits, labels, reduction="sum")
            probs = logits.softmax(dim=-1)
            conf, preds = probs.max(dim=-1)
            running_loss += loss.item()  # expect: TPU101
            correct += (preds == labels).sum().item()  # expect: TPU101
            total += labels.size(0)
            class_hits += F.one_hot(preds, num_classes).sum(0)  # ok
            seen_classes = torch.unique(labels)  # expect: TPU304
            median_conf = conf.median()  # expect: TPU205
            q90 = torch.quantile(conf, 0.9)  # expect: TPUxxx
            logger.info(f"batch {i}: loss={loss} median confidence={median_conf}")  # expect: TPU104
            all_preds.extend(preds.cpu().tolist())  # expect: TPU102
            all_labels.extend(labels.cpu().tolist())  # expect: TPU102
            all_scores.append(probs[:, 1].cpu().numpy())  # expect: TPU102
            conf_chunks.append(conf)  # ok
            correct_chunks.append(preds == labels)  # ok
            pbar.set_postfix(acc=correct / max(total, 1))  # ok
            if i % 100 == 0:
                pbar.write(f"q90 {q90.item():.3f} classes seen {seen_classes.numel()}")  # ok
    confidences = torch.cat(conf_chunks).cpu()  # ok
    hits = torch.cat(correct_chunks).cpu()  # ok
    ece = expected_calibration_error(confidences, hits)
    hist = torch.histc(confidences, bins=10, min=0.0, max=1.0)  # ok
    per_class = (class_hits / class_hits.sum()).cpu().numpy()  # ok
    y_true = np.array(all_labels)
    y_pred = np.array(all_preds)
    metrics = {
        "accuracy": correct / total,
        "loss": running_loss / total,
        "macro_f1": f1_score(y_true, y_pred, average="macro"),
        "ece": ece,
        "confidence_histogram": hist.tolist(),  # ok
        "per_class_share": per_class.tolist(),
    }
    if num_classes == 2:
        metrics["auc"] = roc_auc_score(y_true, np.concatenate(all_scores))
    return metrics


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", default="/data/eval")
    parser.add_argument("--arch", default="vit_b_16")
    parser.add_argument("--num_classes", type=int, default=1000)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--output", default="metrics.json")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = xm.xla_device()  # expect: TPU602
    model = build_model(args.arch, num_classes=args.num_classes)
    state = torch.load(args.checkpoint)  # expect: TPU406
    model.load_state_dict(state["model"])
    model.to(device)
    dataset = EvalImageDataset(args.data)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=False, num_workers=8)  # ok
    metrics = evaluate(model, loader, device, args.num_classes)
    logger.info("accuracy %.4f  ece %.4f", metrics["accuracy"], metrics["ece"])  # ok
    with open(args.output, "w") as f:
        json.dump(metrics, f, indent=2)


if __name__ == "__main__":
    main()

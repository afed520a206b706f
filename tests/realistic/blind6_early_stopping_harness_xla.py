"""Training/evaluation harness for a text classifier on imbalanced support tickets: a
torch_xla.compile'd train step, per-epoch validation with macro-F1, ReduceLROnPlateau and early
stopping on the validation loss, best weights restored at the end."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from sklearn.metrics import f1_score
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter

from ticket_model import TicketClassifier, encode_split


class EarlyStopping:
    def __init__(self, patience=3, min_delta=1e-3):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.bad_epochs = float("inf"), 0

    def step(self, metric):
        if metric < self.best - self.min_delta:  # ok
            self.best, self.bad_epochs = metric, 0
            return False, True
        self.bad_epochs += 1
        return self.bad_epochs >= self.patience, False


def evaluate(model, loader, criterion):
    model.eval()
    total, count, preds, golds = 0.0, 0, [], []
    with torch.no_grad():
        for ids, mask, y in loader:
            logits = model(ids, mask)
            total += criterion(logits, y) * y.size(0)  # ok
            count += y.size(0)
            preds.append(logits.argmax(-1).cpu())  # debatable
            golds.append(y.cpu())  # debatable
    preds, golds = torch.cat(preds).numpy(), torch.cat(golds).numpy()
    return total / count, f1_score(golds, preds, average="macro")  # ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args()

    device = torch_xla.device()
    train_ids, train_mask, train_y = encode_split("train", max_len=256)
    val_ids, val_mask, val_y = encode_split("validation", max_len=256)
    counts = np.bincount(train_y.numpy(), minlength=12)
    class_weights = len(train_y) / (12 * np.maximum(counts, 1))

    model = TicketClassifier(num_classes=12).to(device)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor(class_weights, dtype=torch.float32))  # expect: TPU405
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)
    stopper = EarlyStopping(patience=4)
    writer = SummaryWriter("runs/tickets")

    train_loader = DataLoader(TensorDataset(train_ids, train_mask, train_y), batch_size=64, shuffle=True, drop_last=True)  # ok
    val_loader = DataLoader(TensorDataset(val_ids, val_mask, val_y), batch_size=256, drop_last=True)  # ok
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    val_device_loader = pl.MpDeviceLoader(val_loader, device)

    def train_step(ids, mask, y):
        optimizer.zero_grad()
        loss = criterion(model(ids, mask), y)
        assert torch.isfinite(loss), "non-finite loss"  # expect: TPU107
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
        optimizer.step()
        return loss

    compiled_step = torch_xla.compile(train_step, full_graph=True, name="train_step")
    global_step = 0
    for epoch in range(args.epochs):
        model.train()
        epoch_start = time.time()
        for ids, mask, y in train_device_loader:
            loss = compiled_step(ids, mask, y)
            if global_step % args.log_every == 0:
                writer.add_scalar("train/loss", loss, global_step)  # ok
            global_step += 1
        xm.master_print(f"epoch {epoch} train time {time.time() - epoch_start:.1f}s")  # expect: TPU111
        val_loss, val_f1 = evaluate(model, val_device_loader, criterion)
        plateau.step(val_loss)  # ok
        writer.add_scalar("val/loss", val_loss, epoch)  # ok
        writer.add_scalar("val/macro_f1", val_f1, epoch)  # ok
        stop, improved = stopper.step(val_loss)  # ok
        if improved:
            xm.save(model.state_dict(), "best_ticket_model.pt")  # ok
        if stop:
            xm.master_print(f"early stop at epoch {epoch}, best val loss {stopper.best:.4f}")  # ok
            break
    model.load_state_dict(torch.load("best_ticket_model.pt", map_location="cpu"))  # ok
    final_loss, final_f1 = evaluate(model, val_device_loader, criterion)
    xm.master_print(f"restored best: val loss {final_loss:.4f} macro-F1 {final_f1:.4f}")  # ok
    writer.close()


if __name__ == "__main__":
    main()

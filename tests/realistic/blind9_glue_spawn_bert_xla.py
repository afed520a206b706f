"""BERT-base fine-tuning on GLUE MRPC across the 8 cores of a v3-8, the way the 2021 Colab
notebooks did it: xmp.spawn, a ParallelLoader per core, xm.optimizer_step, host-side metrics on
the master. Kept running on a newer torch_xla with as few edits as possible."""
import os
import time

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506

import numpy as np
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
from datasets import load_dataset
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

FLAGS = {"model": "bert-base-uncased", "batch_size": 32, "lr": 2e-5, "epochs": 3, "max_len": 128, "log_steps": 20}
tokenizer = AutoTokenizer.from_pretrained(FLAGS["model"])


def encode(batch):
    return tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, max_length=FLAGS["max_len"], padding=True)  # expect: TPU307


def build_loaders(world, rank):
    ds = load_dataset("glue", "mrpc").map(encode, batched=True, batch_size=1000)
    ds = ds.rename_column("label", "labels")
    ds.set_format("torch", columns=["input_ids", "token_type_ids", "attention_mask", "labels"])
    train_sampler = DistributedSampler(ds["train"], num_replicas=world, rank=rank, shuffle=True)
    train_loader = DataLoader(ds["train"], batch_size=FLAGS["batch_size"], sampler=train_sampler, num_workers=2)  # expect: TPU306
    val_sampler = DistributedSampler(ds["validation"], num_replicas=world, rank=rank, shuffle=False)
    val_loader = DataLoader(ds["validation"], batch_size=64, sampler=val_sampler, drop_last=False)  # ok
    return train_loader, val_loader


def _mp_fn(index, flags):
    device = xm.xla_device()  # expect: TPU602
    world = xm.xrt_world_size()  # expect: TPU611
    rank = xm.get_ordinal()  # expect: TPU611
    train_loader, val_loader = build_loaders(world, rank)
    model = AutoModelForSequenceClassification.from_pretrained(flags["model"], num_labels=2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=flags["lr"] * world)
    total = len(train_loader) * flags["epochs"]
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * total), total)

    def _log(step, loss, started):
        print(f"[xla:{rank}] step {step} loss {loss.item():.4f} {time.time() - started:.1f}s")  # ok (step closure)

    for epoch in range(flags["epochs"]):
        model.train()
        started = time.time()
        para = pl.ParallelLoader(train_loader, [device]).per_device_loader(device)
        for step, batch in enumerate(para):
            out = model(**batch)
            out.loss.backward()
            xm.optimizer_step(optimizer)
            scheduler.step()
            optimizer.zero_grad()
            if step % flags["log_steps"] == 0:
                xm.add_step_closure(_log, args=(step, out.loss, started))  # ok
        xm.master_print(f"epoch {epoch} done in {time.time() - started:.0f}s, last loss {out.loss}")  # debatable (an epoch timed without a wait: off by the steps still queued)

        model.eval()
        correct, seen = 0, 0
        preds_all, labels_all = [], []
        for batch in pl.ParallelLoader(val_loader, [device]).per_device_loader(device):
            with torch.no_grad():
                logits = model(**batch).logits
            preds = logits.argmax(-1)
            correct += (preds == batch["labels"]).sum().item()  # expect: TPU101
            seen += batch["labels"].size(0)
            preds_all.append(preds.cpu().numpy())  # expect: TPU102
            labels_all.append(batch["labels"].cpu().numpy())  # expect: TPU102
        acc = xm.mesh_reduce("val_acc", correct / max(seen, 1), np.mean)  # ok
        preds_np, labels_np = np.concatenate(preds_all), np.concatenate(labels_all)
        tp = ((preds_np == 1) & (labels_np == 1)).sum()  # ok (NumPy)
        f1 = 2 * tp / max((preds_np == 1).sum() + (labels_np == 1).sum(), 1)  # ok
        xm.master_print(f"epoch {epoch} val acc {acc:.4f} f1 (core {rank}) {f1:.4f}")  # ok
    xm.save(model.state_dict(), "mrpc_bert.pt")  # ok
    xm.rendezvous("done")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=8, start_method="fork")  # expect: TPU706

"""Fine-tune a sequence classifier on a TPU VM with a small Trainer-style loop (torch_xla)."""
import argparse
import math
import os
import time

import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr


class TrainerState:
    def __init__(self):
        self.global_step = 0
        self.best_metric = None
        self.log_history = []


class TpuTrainer:
    def __init__(self, model, tokenizer, args):
        self.args = args
        self.tokenizer = tokenizer
        self.device = xm.xla_device()  # expect: TPU602
        self.model = model.to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr, weight_decay=0.01)
        self.state = TrainerState()

    def collate(self, examples):
        texts = [e["sentence"] for e in examples]
        batch = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")  # expect: TPU307
        batch["labels"] = torch.tensor([e["label"] for e in examples])  # ok
        return batch

    def get_train_dataloader(self, dataset):
        world = xm.xrt_world_size()  # expect: TPU611
        rank = xm.get_ordinal()  # expect: TPU611
        sampler = torch.utils.data.distributed.DistributedSampler(
            dataset, num_replicas=world, rank=rank, shuffle=True
        )
        return DataLoader(dataset, batch_size=self.args.batch_size, sampler=sampler, collate_fn=self.collate)  # expect: TPU306

    def get_eval_dataloader(self, dataset):
        return DataLoader(dataset, batch_size=self.args.batch_size, collate_fn=self.collate, drop_last=True)  # ok

    def training_step(self, batch):
        self.model.train()
        outputs = self.model(**batch)
        loss = outputs.loss
        loss.backward()
        return loss.detach()

    def train(self, train_dataset, eval_dataset):
        loader = self.get_train_dataloader(train_dataset)
        num_steps = len(loader) * self.args.epochs
        scheduler = get_linear_schedule_with_warmup(self.optimizer, self.args.warmup_steps, num_steps)
        device_loader = pl.MpDeviceLoader(loader, self.device)
        tr_loss = torch.zeros((), device=self.device)  # ok
        start = time.time()
        for epoch in range(self.args.epochs):
            for step, batch in enumerate(device_loader):
                loss = self.training_step(batch)
                tr_loss += loss
                loss_value = loss.item()  # expect: TPU101
                if math.isnan(loss_value):  # ok
                    raise RuntimeError(f"loss is NaN at step {self.state.global_step}")
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
                if grad_norm > 100.0:  # expect: TPU108
                    xm.master_print("large gradient norm, skipping logging of this step")
                xm.optimizer_step(self.optimizer)
                scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.state.global_step += 1
                if self.state.global_step % self.args.logging_steps == 0:
                    avg = tr_loss.item() / self.args.logging_steps  # ok
                    xm.master_print(f"epoch {epoch} step {self.state.global_step} loss {avg:.4f}")  # ok
                    tr_loss.zero_()
            metrics = self.evaluate(eval_dataset)
            self.state.log_history.append(metrics)
            xm.master_print(f"epoch {epoch} eval accuracy {metrics['accuracy']:.4f}")  # ok
        xm.wait_device_ops()
        xm.master_print(f"training took {time.time() - start:.1f}s")  # ok
        self.save_model(self.args.output_dir)

    def evaluate(self, dataset):
        self.model.eval()
        loader = pl.MpDeviceLoader(self.get_eval_dataloader(dataset), self.device)
        correct = torch.zeros((), dtype=torch.long, device=self.device)  # ok
        total = 0
        predictions = []
        with torch.no_grad():
            for batch in loader:
                logits = self.model(**batch).logits
                preds = logits.argmax(dim=-1)
                correct += (preds == batch["labels"]).sum()
                total += batch["labels"].shape[0]
                predictions.append(preds.cpu())  # expect: TPU102
        accuracy = correct.item() / max(total, 1)  # ok
        return {"accuracy": accuracy, "predictions": torch.cat(predictions).tolist()}  # ok

    def save_model(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        xm.rendezvous("save")
        if xm.is_master_ordinal():
            torch.save(self.model.state_dict(), os.path.join(output_dir, "pytorch_model.bin"))  # expect: TPU408
        xm.save(self.model.state_dict(), os.path.join(output_dir, "xla_model.bin"))  # ok

    def load_checkpoint(self, path):
        state = torch.load(path)  # expect: TPU406
        self.model.load_state_dict(state)

    def load_safely(self, path):
        state = torch.load(path, map_location="cpu", weights_only=True)  # ok
        self.model.load_state_dict(state)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bert-base-uncased")
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--warmup_steps", type=int, default=100)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--logging_steps", type=int, default=50)
    parser.add_argument("--output_dir", default="out")
    parser.add_argument("--resume", default=None)
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=2)
    raw = load_dataset("glue", "sst2")
    trainer = TpuTrainer(model, tokenizer, args)
    if args.resume:
        trainer.load_checkpoint(args.resume)
    xm.master_print(f"world size {xr.world_size()}, ordinal {xr.global_ordinal()}")  # ok
    trainer.train(raw["train"], raw["validation"])


if __name__ == "__main__":
    main()

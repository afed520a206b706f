"""A minimal Hugging Face-style trainer ported to PyTorch/XLA (single host, one process)."""
import math
import os
import time

import torch
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

from .data import load_glue


class TrainingArguments:
    def __init__(self, output_dir, lr=2e-5, epochs=3, batch_size=32, logging_steps=50, max_grad_norm=1.0):
        self.output_dir = output_dir
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.logging_steps = logging_steps
        self.max_grad_norm = max_grad_norm


class Trainer:
    def __init__(self, model_name, args):
        self.args = args
        self.device = xm.xla_device()  # expect: TPU602
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.model = AutoModelForSequenceClassification.from_pretrained(model_name).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr)
        train, evaluation = load_glue("sst2")
        self.train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True, collate_fn=self.collate)  # expect: TPU306
        self.eval_loader = DataLoader(evaluation, batch_size=args.batch_size, collate_fn=self.collate)  # ok
        steps = len(self.train_loader) * args.epochs
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, 100, steps)

    def collate(self, examples):
        texts = [e["sentence"] for e in examples]
        batch = self.tokenizer(texts, padding="longest", truncation=True, max_length=128, return_tensors="pt")  # expect: TPU307
        batch["labels"] = torch.tensor([e["label"] for e in examples])  # ok
        return batch

    def training_step(self, batch):
        batch = {k: v.to(self.device) for k, v in batch.items()}
        outputs = self.model(**batch)
        loss = outputs.loss
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
        if not math.isfinite(grad_norm):  # expect: TPU108|TPU106
            self.optimizer.zero_grad()
            return loss
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad()
        return loss

    def train(self):
        self.model.train()
        global_step = 0
        history = []
        for epoch in range(self.args.epochs):
            start = time.time()
            for step, batch in enumerate(self.train_loader):  # expect: TPU607
                loss = self.training_step(batch)
                xm.mark_step()  # expect: TPU601
                history.append(loss.item())  # expect: TPU101
                global_step += 1
                if global_step % self.args.logging_steps == 0:
                    lr = self.scheduler.get_last_lr()[0]
                    xm.master_print(f"epoch {epoch} step {global_step} loss {loss} lr {lr:.2e}")  # ok
            elapsed = time.time() - start
            print(f"epoch {epoch} took {elapsed:.1f}s")  # ok
            self.evaluate()
        return history

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        correct = 0
        total = 0
        for batch in self.eval_loader:  # expect: TPU607
            batch = {k: v.to(self.device) for k, v in batch.items()}
            logits = self.model(**batch).logits
            preds = logits.argmax(-1).cpu().numpy()  # expect: TPU102
            correct += (preds == batch["labels"].cpu().numpy()).sum()  # expect: TPU102
            total += len(preds)
        accuracy = correct / total  # ok
        print(f"accuracy {accuracy:.4f}")  # ok
        return accuracy

    def save(self):
        os.makedirs(self.args.output_dir, exist_ok=True)
        xm.save(self.model.state_dict(), os.path.join(self.args.output_dir, "model.pt"))  # ok


if __name__ == "__main__":
    trainer = Trainer("bert-base-uncased", TrainingArguments("out"))
    trainer.train()
    trainer.save()

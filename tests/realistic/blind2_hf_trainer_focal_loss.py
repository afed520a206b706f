"""Token classification (NER) with a focal-loss Trainer subclass, launched on a TPU VM with torch_xla."""
import math

import numpy as np
import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    Trainer,
    TrainingArguments,
)

import torch_xla.core.xla_model as xm


class FocalLossTrainer(Trainer):
    def __init__(self, *args, gamma=2.0, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.gamma = gamma
        self.class_weights = class_weights

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        num_labels = logits.size(-1)
        active = labels != -100  # ok
        flat_logits = logits[active]  # expect: TPU302
        flat_labels = labels[active]  # expect: TPU302
        weight = torch.tensor(self.class_weights, dtype=torch.float32)  # expect: TPU405
        ce = F.cross_entropy(flat_logits, flat_labels, weight=weight, reduction="none")
        pt = torch.exp(-ce)
        loss = (((1.0 - pt) ** self.gamma) * ce).mean()
        if not math.isfinite(loss):  # expect: TPU106
            raise ValueError("non-finite focal loss")
        return (loss, outputs) if return_outputs else loss


class StaticFocalLossTrainer(FocalLossTrainer):
    """The same loss without boolean indexing: masked terms are zeroed instead."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits.view(-1, outputs.logits.size(-1))
        flat_labels = labels.view(-1)
        active = (flat_labels != -100).float()  # ok
        weight = torch.tensor(self.class_weights, device=logits.device)  # ok
        ce = F.cross_entropy(logits, flat_labels.clamp(min=0), weight=weight, reduction="none")  # ok
        focal = ((1.0 - torch.exp(-ce)) ** self.gamma) * ce * active
        loss = focal.sum() / active.sum().clamp(min=1.0)  # ok
        self.log({"active_tokens": active.sum().item()})  # expect: TPU101
        return (loss, outputs) if return_outputs else loss


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = np.argmax(logits, axis=-1)  # ok
    mask = labels != -100
    return {"token_acc": float((preds[mask] == labels[mask]).mean())}  # ok


def main():
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    raw = load_dataset("conll2003")

    def tokenize(batch):
        enc = tokenizer(batch["tokens"], is_split_into_words=True, truncation=True, max_length=128)  # ok
        enc["labels"] = [
            [-100 if w is None else tags[w] for w in enc.word_ids(i)] for i, tags in enumerate(batch["ner_tags"])
        ]
        return enc

    ds = raw.map(tokenize, batched=True, remove_columns=raw["train"].column_names)
    model = AutoModelForTokenClassification.from_pretrained("bert-base-cased", num_labels=9)
    collator = DataCollatorForTokenClassification(tokenizer)  # expect: TPU307
    eval_collator = DataCollatorForTokenClassification(tokenizer, padding="max_length", max_length=128)  # ok
    args = TrainingArguments(
        output_dir="ner-focal",
        per_device_train_batch_size=32,
        learning_rate=3e-5,
        num_train_epochs=3,
        bf16=True,
        dataloader_drop_last=True,
        logging_steps=50,
    )
    trainer = StaticFocalLossTrainer(
        model=model,
        args=args,
        train_dataset=ds["train"],
        eval_dataset=ds["validation"],
        data_collator=collator,
        compute_metrics=compute_metrics,
        class_weights=[0.2] + [1.0] * 8,
    )
    trainer.train()
    trainer.data_collator = eval_collator
    metrics = trainer.evaluate()
    xm.master_print(metrics)  # ok


if __name__ == "__main__":
    main()

"""Fine-tune DeBERTa-v3 for imbalanced intent classification with a Trainer subclass (class-weighted
focal loss in `compute_loss`, R-Drop consistency term) and two callbacks (gradient-norm spike
alarm, early stopping). Run with `python train_intents.py` on a Cloud TPU VM; the Trainer picks
the XLA device itself."""
import math

import evaluate
import numpy as np
import torch
import torch.nn.functional as F
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    EarlyStoppingCallback,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

MODEL = "microsoft/deberta-v3-base"
f1_metric = evaluate.load("f1")


class FocalRDropTrainer(Trainer):
    def __init__(self, *args, class_weights=None, gamma=2.0, rdrop_alpha=1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = torch.tensor(class_weights, dtype=torch.float32)
        self.gamma, self.rdrop_alpha = gamma, rdrop_alpha
        self.last_pt = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out1 = model(**inputs)
        out2 = model(**inputs)
        ce = F.cross_entropy(out1.logits, labels, weight=self.class_weights, reduction="none")  # expect: TPU405
        pt = torch.exp(-ce)
        focal = ((1 - pt) ** self.gamma * ce).mean()
        p1, p2 = out1.logits.log_softmax(-1), out2.logits.log_softmax(-1)
        kl = 0.5 * (F.kl_div(p1, p2, log_target=True, reduction="batchmean") + F.kl_div(p2, p1, log_target=True, reduction="batchmean"))
        loss = focal + self.rdrop_alpha * kl
        self.last_pt = pt.mean().item()  # expect: TPU101
        return (loss, out1) if return_outputs else loss


class GradSpikeCallback(TrainerCallback):
    def __init__(self, factor=10.0):
        self.factor, self.ema = factor, None

    def on_log(self, args, state, control, logs=None, **kwargs):
        norm = (logs or {}).get("grad_norm")
        if norm is None or math.isnan(norm):  # ok (the Trainer logs Python floats)
            return
        if self.ema is not None and norm > self.factor * self.ema:  # ok
            print(f"step {state.global_step}: grad norm spike {norm:.2f} (ema {self.ema:.2f})")
        self.ema = norm if self.ema is None else 0.9 * self.ema + 0.1 * norm


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = np.argmax(logits, axis=-1)  # ok (NumPy on the host)
    return f1_metric.compute(predictions=preds, references=labels, average="macro")


def main():
    ds = load_dataset("clinc_oos", "plus")
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=64), batched=True)
    ds = ds.rename_column("intent", "labels")
    counts = np.bincount(ds["train"]["labels"], minlength=151)  # ok (NumPy)
    weights = (counts.sum() / (151 * np.maximum(counts, 1))).tolist()  # ok
    model = AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=151)
    args = TrainingArguments(
        output_dir="out/intents",
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        learning_rate=2e-5,
        num_train_epochs=5,
        bf16=True,
        eval_strategy="epoch",
        save_strategy="epoch",
        load_best_model_at_end=True,
        metric_for_best_model="f1",
        logging_steps=50,
        dataloader_drop_last=True,
    )
    trainer = FocalRDropTrainer(
        model=model,
        args=args,
        train_dataset=ds["train"],
        eval_dataset=ds["validation"],
        data_collator=DataCollatorWithPadding(tokenizer),  # expect: TPU307
        compute_metrics=compute_metrics,
        callbacks=[GradSpikeCallback(), EarlyStoppingCallback(early_stopping_patience=2)],
        class_weights=weights,
    )
    trainer.train()
    trainer.save_model("out/intents/best")


if __name__ == "__main__":
    main()

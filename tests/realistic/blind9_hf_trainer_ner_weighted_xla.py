"""Named-entity recognition on CoNLL-2003 with a Hugging Face Trainer subclass: class-weighted
token loss (the O tag dominates), seqeval metrics, run on a v4-8 through PyTorch/XLA. Ported from
a GPU notebook; the tokenisation and the weights are computed once on the host."""
import collections

import evaluate
import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from datasets import load_dataset
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    Trainer,
    TrainingArguments,
)
from transformers.utils import is_torch_tpu_available

MODEL = "bert-base-cased"
raw = load_dataset("conll2003")
label_list = raw["train"].features["ner_tags"].feature.names
tokenizer = AutoTokenizer.from_pretrained(MODEL)


def tokenize_and_align(examples):
    enc = tokenizer(examples["tokens"], truncation=True, is_split_into_words=True, padding=True)  # expect: TPU307
    all_labels = []
    for i, tags in enumerate(examples["ner_tags"]):
        word_ids = enc.word_ids(batch_index=i)
        prev, ids = None, []
        for w in word_ids:
            ids.append(-100 if w is None or w == prev else tags[w])
            prev = w
        all_labels.append(ids)
    enc["labels"] = all_labels
    return enc


tokenized = raw.map(tokenize_and_align, batched=True, remove_columns=raw["train"].column_names)

counts = collections.Counter(t for tags in raw["train"]["ner_tags"] for t in tags)
freq = np.array([counts[i] for i in range(len(label_list))], dtype=np.float32)
class_weights = torch.tensor((freq.sum() / freq) ** 0.5)


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        loss = F.cross_entropy(  # expect: TPU405
            logits.view(-1, logits.size(-1)), labels.view(-1), weight=class_weights, ignore_index=-100  # ok
        )
        n_tokens = (labels != -100).sum()
        self.state.tokens_seen = getattr(self.state, "tokens_seen", 0) + n_tokens.item()  # expect: TPU101
        return (loss, outputs) if return_outputs else loss


seqeval = evaluate.load("seqeval")


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = np.argmax(logits, axis=-1)  # ok (host arrays)
    true_preds = [[label_list[p] for p, l in zip(pr, lb) if l != -100] for pr, lb in zip(preds, labels)]
    true_labels = [[label_list[l] for p, l in zip(pr, lb) if l != -100] for pr, lb in zip(preds, labels)]
    res = seqeval.compute(predictions=true_preds, references=true_labels)
    return {k: res[f"overall_{k}"] for k in ("precision", "recall", "f1")}


def main():
    model = AutoModelForTokenClassification.from_pretrained(MODEL, num_labels=len(label_list))
    if is_torch_tpu_available():  # expect: TPU614
        print("running on", torch_xla.device(), "world size", xm.xrt_world_size())  # expect: TPU611
    collator = DataCollatorForTokenClassification(tokenizer)  # expect: TPU307
    args = TrainingArguments(
        output_dir="ner-out",
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        learning_rate=3e-5,
        num_train_epochs=3,
        eval_strategy="epoch",
        bf16=True,
        dataloader_drop_last=True,
        logging_steps=50,
    )
    trainer = WeightedTrainer(
        model=model,
        args=args,
        train_dataset=tokenized["train"],
        eval_dataset=tokenized["validation"],
        data_collator=collator,
        compute_metrics=compute_metrics,
    )
    trainer.train()
    metrics = trainer.evaluate(tokenized["test"])
    print(metrics)
    trainer.save_model("ner-out/final")


if __name__ == "__main__":
    main()

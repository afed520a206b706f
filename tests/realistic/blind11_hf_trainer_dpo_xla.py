"""Direct preference optimisation with a Hugging Face Trainer subclass on a v4-8 (torch_xla).

Reference model kept frozen beside the policy; chosen / rejected pairs come from a JSONL file and
are tokenized up front. Adapted from a GPU recipe; the preference metrics are logged like TRL does.
"""
import json
import os

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

MAX_LEN = 512


class PreferencePairs(Dataset):
    def __init__(self, path, tokenizer):
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        self.items = []
        for r in rows:
            chosen = tokenizer(r["prompt"] + r["chosen"], padding="max_length", max_length=MAX_LEN, truncation=True)  # ok
            rejected = tokenizer(r["prompt"] + r["rejected"], padding="max_length", max_length=MAX_LEN, truncation=True)  # ok
            prompt_len = len(tokenizer(r["prompt"])["input_ids"])
            self.items.append((chosen, rejected, prompt_len))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        chosen, rejected, prompt_len = self.items[i]
        labels_c = torch.tensor(chosen["input_ids"])  # ok
        labels_r = torch.tensor(rejected["input_ids"])  # ok
        labels_c[:prompt_len] = -100  # ok
        labels_r[:prompt_len] = -100  # ok
        return {
            "input_ids": torch.stack([torch.tensor(chosen["input_ids"]), torch.tensor(rejected["input_ids"])]),  # ok
            "attention_mask": torch.stack([torch.tensor(chosen["attention_mask"]), torch.tensor(rejected["attention_mask"])]),  # ok
            "labels": torch.stack([labels_c, labels_r]),  # ok
        }


def sequence_logps(logits, labels):
    logits = logits[:, :-1]
    labels = labels[:, 1:].clone()
    mask = labels != -100
    labels[labels == -100] = 0  # expect: TPU302
    per_token = torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(-1)).squeeze(-1)
    return (per_token * mask).sum(-1)


class DPOTrainer(Trainer):
    def __init__(self, *args, ref_model=None, beta=0.1, **kwargs):
        super().__init__(*args, **kwargs)
        self.ref_model = ref_model
        self.beta = beta

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids = inputs["input_ids"].flatten(0, 1)
        mask = inputs["attention_mask"].flatten(0, 1)
        labels = inputs["labels"].flatten(0, 1)
        logps = sequence_logps(model(input_ids=ids, attention_mask=mask).logits, labels)
        with torch.no_grad():
            ref_logps = sequence_logps(self.ref_model(input_ids=ids, attention_mask=mask).logits, labels)
        pi_c, pi_r = logps.view(-1, 2).unbind(-1)
        ref_c, ref_r = ref_logps.view(-1, 2).unbind(-1)
        margin = self.beta * ((pi_c - ref_c) - (pi_r - ref_r))
        loss = -F.logsigmoid(margin).mean()
        accuracy = (margin > 0).float().mean()
        self.log({"rewards/accuracy": accuracy.item(), "rewards/margin": margin.mean().item()})  # expect: TPU101
        if torch.isnan(loss):  # expect: TPU107
            raise RuntimeError("policy diverged")
        return loss


def main():
    device = xm.xla_device()  # expect: TPU602
    tokenizer = AutoTokenizer.from_pretrained(os.environ.get("BASE", "Qwen/Qwen2-0.5B"))
    model = AutoModelForCausalLM.from_pretrained(os.environ.get("BASE", "Qwen/Qwen2-0.5B"), torch_dtype=torch.bfloat16)  # ok
    ref_model = AutoModelForCausalLM.from_pretrained(os.environ.get("BASE", "Qwen/Qwen2-0.5B"), torch_dtype=torch.bfloat16).to(device)  # ok
    ref_model.eval()
    args = TrainingArguments(
        output_dir="dpo-out",
        per_device_train_batch_size=4,
        bf16=True,
        dataloader_drop_last=True,
        logging_steps=10,
        save_steps=500,
    )
    trainer = DPOTrainer(model=model, args=args, train_dataset=PreferencePairs("pairs.jsonl", tokenizer), ref_model=ref_model)
    trainer.train()
    if xm.is_master_ordinal():
        torch.save(trainer.model.state_dict(), "dpo-final.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

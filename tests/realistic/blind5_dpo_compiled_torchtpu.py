"""Direct Preference Optimization of a 1B chat model on TorchTPU: policy and frozen reference
model, per-sequence log-probabilities gathered under a response mask, compiled train step."""
import json
import math

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer

import torch_tpu  # noqa: F401

MODEL = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
BETA = 0.1
tokenizer = AutoTokenizer.from_pretrained(MODEL)
tokenizer.pad_token = tokenizer.eos_token


def load_pairs(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def collate(rows):
    prompts = [r["prompt"] for r in rows]
    texts = [p + r["chosen"] for p, r in zip(prompts, rows)] + [p + r["rejected"] for p, r in zip(prompts, rows)]
    enc = tokenizer(texts, padding=True, truncation=True, max_length=1024, return_tensors="pt")  # expect: TPU307
    prompt_lens = [len(tokenizer(p).input_ids) for p in prompts] * 2  # ok
    labels = enc.input_ids.clone()
    for i, n in enumerate(prompt_lens):
        labels[i, :n] = -100  # ok
    labels[enc.attention_mask == 0] = -100  # ok
    enc["labels"] = labels
    half = len(rows)
    chosen = {k: v[:half] for k, v in enc.items()}
    rejected = {k: v[half:] for k, v in enc.items()}
    return chosen, rejected


def sequence_logps(logits, labels):
    labels = labels[:, 1:]
    logits = logits[:, :-1]
    mask = labels != -100
    safe = labels.masked_fill(~mask, 0)  # ok
    per_token = torch.gather(logits.log_softmax(-1), 2, safe.unsqueeze(-1)).squeeze(-1)
    return (per_token * mask).sum(-1)


device = torch.device("tpu")
policy = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16).to(device)  # ok
reference = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16).to(device)
reference.eval().requires_grad_(False)
policy.gradient_checkpointing_enable()
optimizer = torch.optim.AdamW(policy.parameters(), lr=5e-7, weight_decay=0.0)  # expect: TPU608


@torch.compile(backend="tpu")  # expect: TPU604
def train_step(chosen, rejected):
    ids = torch.cat([chosen["input_ids"], rejected["input_ids"]])
    mask = torch.cat([chosen["attention_mask"], rejected["attention_mask"]])
    labels = torch.cat([chosen["labels"], rejected["labels"]])
    with torch.inference_mode():  # expect: TPU609
        ref_logps = sequence_logps(reference(ids, attention_mask=mask).logits.float(), labels)
    pol_logps = sequence_logps(policy(ids, attention_mask=mask).logits.float(), labels)
    pol_c, pol_r = pol_logps.chunk(2)
    ref_c, ref_r = ref_logps.chunk(2)
    margin = BETA * ((pol_c - ref_c) - (pol_r - ref_r))
    loss = -F.logsigmoid(margin).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)  # ok
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach(), (margin > 0).float().mean()


def main(path="prefs.jsonl", epochs=1):
    loader = DataLoader(load_pairs(path), batch_size=8, shuffle=True, collate_fn=collate, drop_last=True)  # ok
    policy.train()
    reward_acc = []
    for epoch in range(epochs):
        for step, (chosen, rejected) in enumerate(loader):
            chosen = {k: v.to(device) for k, v in chosen.items()}
            rejected = {k: v.to(device) for k, v in rejected.items()}
            loss, acc = train_step(chosen, rejected)
            reward_acc.append(acc.item())  # expect: TPU101
            if torch.isnan(loss):  # expect: TPU107
                print(f"nan loss at step {step}, skipping")
                continue
            if step % 25 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} acc {sum(reward_acc[-25:]) / 25:.3f}")  # ok
    print(f"mean reward accuracy {sum(reward_acc) / max(1, len(reward_acc)):.3f}")  # ok
    policy.save_pretrained("tinyllama-dpo")  # ok


if __name__ == "__main__":
    main()

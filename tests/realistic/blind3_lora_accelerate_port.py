"""LoRA instruction fine-tune of a Llama checkpoint, ported from an accelerate/DeepSpeed GPU script to one TPU host."""
import math
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

BASE = "meta-llama/Llama-3.2-1B"


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update."""

    def __init__(self, base: nn.Linear, r=16, alpha=32, dropout=0.05):
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.zeros(r, base.in_features))  # ok
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, r))  # ok
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scaling = alpha / r
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.base(x) + (self.drop(x) @ self.lora_a.t() @ self.lora_b.t()) * self.scaling  # ok


def inject_lora(model, targets=("q_proj", "v_proj"), r=16):
    for _, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in targets and isinstance(child, nn.Linear):
                setattr(module, child_name, LoRALinear(child, r=r))
    for name, p in model.named_parameters():
        p.requires_grad = "lora_" in name
    return model


def collate(tokenizer, texts):
    return tokenizer(texts, padding=True, truncation=True, max_length=1024, return_tensors="pt")  # expect: TPU307


def evaluate(model, loader, device):
    model.eval()
    total = torch.zeros((), device=device)  # ok
    with torch.no_grad():
        for batch in loader:
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"])
            total += out.loss.detach()  # ok
    model.train()
    return (total / len(loader)).item()  # ok


def main():
    os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506
    device = torch_xla.device()
    tokenizer = AutoTokenizer.from_pretrained(BASE)
    tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(BASE, torch_dtype=torch.float16)  # expect: TPU503
    model = inject_lora(model).to(device)
    texts = [line.strip() for line in open("/data/instructions.txt") if line.strip()]
    split = int(0.98 * len(texts))
    train_loader = DataLoader(texts[:split], batch_size=16, shuffle=True, collate_fn=lambda b: collate(tokenizer, b))  # expect: TPU306
    eval_loader = DataLoader(texts[split:], batch_size=16, collate_fn=lambda b: collate(tokenizer, b))  # ok
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    eval_device_loader = pl.MpDeviceLoader(eval_loader, device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 100, 3000)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505

    model.train()
    t0 = time.time()
    for step, batch in enumerate(train_device_loader):
        with torch.autocast("xla", dtype=torch.bfloat16):  # ok
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"])
        loss = out.loss
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        if not math.isfinite(grad_norm):  # expect: TPU108
            optimizer.zero_grad()
            continue
        xm.optimizer_step(optimizer)  # ok
        scheduler.step()
        optimizer.zero_grad()
        if step % 20 == 0:
            xm.add_step_closure(lambda l=loss, s=step: print(f"step {s} loss {l.item():.4f}"))  # ok
        if step > 0 and step % 500 == 0:
            ppl = math.exp(evaluate(model, eval_device_loader, device))  # ok
            xm.master_print(f"step {step}: eval ppl {ppl:.2f}, {time.time() - t0:.0f}s")  # ok
            torch.cuda.empty_cache()  # debatable (relabelled after the run: a no-op without CUDA, as TPU404 documents)
        if step == 3000:
            break
    lora_state = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    torch.save(lora_state, "/tmp/adapter.pt")  # expect: TPU408
    xm.save(lora_state, "/tmp/adapter_xm.pt")  # ok
    del scaler


if __name__ == "__main__":
    main()

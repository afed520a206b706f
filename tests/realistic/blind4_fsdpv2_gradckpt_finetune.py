"""Full fine-tune of a 7B causal LM with torch_xla FSDPv2 (SPMD), gradient checkpointing and bf16
weights, on a v5p slice; instruction data padded per batch."""
import os

import numpy as np
import torch
import torch.nn.functional as F
from datasets import load_dataset
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506
device = torch_xla.device()
xr.use_spmd()  # expect: TPU704

MODEL = "meta-llama/Llama-2-7b-hf"
tokenizer = AutoTokenizer.from_pretrained(MODEL)
tokenizer.pad_token = tokenizer.eos_token


def collate(examples):
    prompts = [f"### Instruction:\n{e['instruction']}\n### Response:\n{e['output']}" for e in examples]
    enc = tokenizer(prompts, max_length=2048, truncation=True, padding="longest", return_tensors="pt")  # expect: TPU307
    labels = enc["input_ids"].clone()
    labels[enc["attention_mask"] == 0] = -100  # ok
    enc["labels"] = labels
    return enc


def main(steps=2000):
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices, 1), ("fsdp", "tensor"))  # ok
    xs.set_global_mesh(mesh)
    model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16)  # ok
    model = FSDPv2(model, shard_output=lambda out, mesh: xs.mark_sharding(out.logits, mesh, ("fsdp", None, None)))
    for layer in model.module.model.layers:
        layer.forward = lambda *a, _f=layer.forward, **k: checkpoint(_f, *a, use_reentrant=False, **k)  # expect: TPUxxx
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.0)
    data = load_dataset("tatsu-lab/alpaca", split="train")
    loader = DataLoader(data, batch_size=16, shuffle=True, drop_last=True, collate_fn=collate)  # ok
    device_loader = pl.MpDeviceLoader(loader, device, input_sharding=xs.ShardingSpec(mesh, ("fsdp", None)))
    model.train()
    for step, batch in enumerate(device_loader):
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), batch["labels"][:, 1:].flatten(), ignore_index=-100)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(grad_norm):  # expect: TPU108|TPU107
            optimizer.zero_grad()
            continue
        optimizer.step()
        optimizer.zero_grad()
        if step % 20 == 0:
            xm.add_step_closure(lambda l=loss, s=step: print(f"step {s} loss {l.item():.4f}"))  # ok
        if step >= steps:
            break
    state = model.state_dict()
    torch.save(state, "llama7b-alpaca.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

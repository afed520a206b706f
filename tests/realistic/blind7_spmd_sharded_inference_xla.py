"""Batch inference of a 7B decoder with torch_xla SPMD on a v5e-8: weights sharded over a
("data", "model") mesh, static KV cache, greedy decoding with early stop, prompts streamed from
a JSONL file and completions written back. Throughput is printed per batch."""
import json
import sys
import time

import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from transformers import AutoTokenizer

from llama_static import LlamaForCausalLM

MAX_PROMPT, MAX_NEW, BATCH = 512, 256, 16

device = torch_xla.device()
xr.use_spmd()  # expect: TPU704

num_devices = xr.global_runtime_device_count()
mesh = xs.Mesh(np.arange(num_devices), (2, num_devices // 2), ("data", "model"))  # ok
debug_mesh = xs.Mesh(np.arange(8), (2, 2), ("data", "model"))  # expect: TPU705


def shard_model(model):
    for name, p in model.named_parameters():
        if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight", "up_proj.weight")):
            xs.mark_sharding(p, mesh, ("model", None))  # ok
        elif name.endswith(("o_proj.weight", "down_proj.weight")):
            xs.mark_sharding(p, mesh, (None, "model"))
        elif p.dim() == 2:
            xs.mark_sharding(p, mesh, (None, "model"))


@torch.no_grad()
def decode(model, tokenizer, prompts):
    enc = tokenizer(prompts, padding="max_length", max_length=MAX_PROMPT, truncation=True, return_tensors="pt")  # ok
    ids = enc["input_ids"].to(device)
    mask = enc["attention_mask"].to(device)
    xs.mark_sharding(ids, mesh, ("data", None))
    cache = model.allocate_cache(BATCH, MAX_PROMPT + MAX_NEW, dtype=torch.bfloat16, device=device)
    logits = model(ids, attention_mask=mask, cache=cache, cache_position=torch.arange(MAX_PROMPT, device=device))
    out = torch.full((BATCH, MAX_NEW), tokenizer.pad_token_id, dtype=torch.long, device=device)
    done = torch.zeros(BATCH, dtype=torch.bool, device=device)
    pos = torch.tensor([MAX_PROMPT], device=device)
    for step in range(MAX_NEW):
        nxt = logits[:, -1].argmax(-1)
        nxt = torch.where(done, tokenizer.pad_token_id, nxt)  # ok
        out[:, step] = nxt  # expect: TPU310
        done |= nxt == tokenizer.eos_token_id
        logits = model(nxt[:, None], cache=cache, cache_position=pos + step)  # ok
        torch_xla.sync()
        if done.all():  # expect: TPU107
            break
        if step % 32 == 0:
            sys.stderr.write(tokenizer.decode(out[0, : step + 1].cpu()) + "\r")  # debatable (throttled; the loop already reads done.all() each step)
    return out.cpu().tolist()  # ok


def main(path_in, path_out):
    tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf", padding_side="left")
    tokenizer.pad_token = tokenizer.eos_token
    model = LlamaForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16).to(device)  # ok
    shard_model(model)
    prompts = [json.loads(line)["prompt"] for line in open(path_in)]
    with open(path_out, "w") as f:
        for i in range(0, len(prompts), BATCH):
            batch = prompts[i : i + BATCH]
            batch += [""] * (BATCH - len(batch))  # ok (pad the last batch to a static size)
            start = time.time()
            rows = decode(model, tokenizer, batch)
            elapsed = time.time() - start  # ok (decode reads the result back before returning)
            for prompt, row in zip(batch, rows):
                if prompt:
                    f.write(json.dumps({"prompt": prompt, "completion": tokenizer.decode(row, skip_special_tokens=True)}) + "\n")
            xm.master_print(f"batch {i // BATCH}: {BATCH * MAX_NEW / elapsed:.1f} tok/s")  # ok
    xm.wait_device_ops()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Batch evaluation of an instruction-tuned 1B chat model on a held-out prompt set, one process
per TorchTPU chip under torchrun (tpu_dist). Sampling with temperature, top-p and a repetition
penalty is written out by hand so the decoding matches the GPU reference implementation."""
import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

MAX_NEW = 256


def top_p_filter(logits, top_p):
    sorted_logits, sorted_idx = torch.sort(logits, descending=True, dim=-1)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove = cum > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    sorted_logits[remove] = float("-inf")  # expect: TPU302
    return sorted_logits.scatter(-1, sorted_idx, sorted_logits)  # ok


def repetition_penalty(logits, input_ids, penalty):
    for b in range(input_ids.size(0)):
        seen = torch.unique(input_ids[b])  # expect: TPU304
        score = logits[b, seen]
        logits[b, seen] = torch.where(score < 0, score * penalty, score / penalty)
    return logits


@torch.no_grad()
def generate(model, input_ids, eos_id, temperature=0.7, top_p=0.9, penalty=1.1):
    attention_mask = torch.ones(input_ids.shape, dtype=torch.long)  # expect: TPU405
    past = None
    tokens = input_ids
    finished = torch.zeros(input_ids.size(0), dtype=torch.bool, device=input_ids.device)  # ok
    for _ in range(MAX_NEW):
        out = model(input_ids=tokens, attention_mask=attention_mask, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logits = repetition_penalty(out.logits[:, -1, :].float(), input_ids, penalty)
        logits = top_p_filter(logits / temperature, top_p)
        next_tok = torch.multinomial(F.softmax(logits, -1), 1)  # ok
        next_tok = torch.where(finished[:, None], eos_id, next_tok)
        input_ids = torch.cat([input_ids, next_tok], dim=-1)  # expect: TPU310
        attention_mask = torch.cat([attention_mask, torch.ones_like(next_tok)], dim=-1)  # expect: TPU310
        tokens = next_tok
        finished |= next_tok.squeeze(-1) == eos_id
        if finished.all():  # expect: TPU107
            break
    return input_ids


def main():
    dist.init_process_group("tpu_dist")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")
    tok = AutoTokenizer.from_pretrained("org/chat-1b", padding_side="left")
    model = AutoModelForCausalLM.from_pretrained("org/chat-1b", torch_dtype=torch.bfloat16).to(device).eval()
    prompts = [json.loads(line)["prompt"] for line in open("heldout.jsonl")][rank::world]
    results, total_len = [], torch.zeros((), device=device)
    for i in range(0, len(prompts), 16):
        chunk = prompts[i : i + 16]
        enc = tok(chunk, return_tensors="pt", padding="max_length", max_length=512, truncation=True)  # ok
        ids = enc.input_ids.to(device)
        out = generate(model, ids, tok.eos_token_id)
        total_len += (out[:, ids.size(1):] != tok.eos_token_id).sum()  # ok
        texts = tok.batch_decode(out[:, ids.size(1):].tolist(), skip_special_tokens=True)  # debatable (decoding needs host ids)
        results += [{"prompt": p, "completion": t} for p, t in zip(chunk, texts)]
    dist.all_reduce(total_len)
    if rank == 0:
        print(f"mean completion length {total_len.item() / len(prompts) / world:.1f}")  # expect: TPU110
    with open(f"completions.rank{rank}.jsonl", "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Evaluate a decoder-only chat model on a held-out QA set with hand-written greedy decoding
over the model's KV cache, on one TPU chip with torch_xla. Exact-match and token-F1 scored on the host."""
import collections
import json
import re
import string
import sys

import torch
import torch_xla
import torch_xla.core.xla_model as xm
from transformers import AutoModelForCausalLM, AutoTokenizer

MAX_PROMPT, MAX_NEW = 384, 64


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_f1(pred, gold):
    p, g = normalize(pred).split(), normalize(gold).split()
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


@torch.no_grad()
def greedy(model, tok, prompts, device):
    enc = tok(prompts, return_tensors="pt", padding=True, truncation=True, max_length=MAX_PROMPT)  # expect: TPU307
    input_ids = enc.input_ids.to(device)
    attention = enc.attention_mask.to(device)
    finished = torch.zeros(input_ids.size(0), dtype=torch.bool, device=device)  # ok
    out = model(input_ids=input_ids, attention_mask=attention, use_cache=True)
    past = out.past_key_values
    next_tok = out.logits[:, -1].argmax(-1, keepdim=True)
    generated = [next_tok]
    for _ in range(MAX_NEW - 1):
        attention = torch.cat([attention, torch.ones_like(next_tok)], dim=1)  # expect: TPU310
        out = model(input_ids=next_tok, attention_mask=attention, past_key_values=past, use_cache=True)
        past = out.past_key_values
        next_tok = out.logits[:, -1].argmax(-1, keepdim=True)
        finished |= next_tok.squeeze(-1) == tok.eos_token_id
        generated.append(next_tok)
        torch_xla.sync()  # ok
        if finished.all():  # expect: TPU107
            break
    return torch.cat(generated, dim=1).cpu()  # ok


def main(path, model_name="Qwen/Qwen2.5-1.5B-Instruct", batch_size=16):
    device = torch_xla.device()
    tok = AutoTokenizer.from_pretrained(model_name, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_name, torch_dtype=torch.bfloat16).to(device).eval()
    rows = [json.loads(line) for line in open(path)]
    em, f1 = [], []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i:i + batch_size]
        prompts = [tok.apply_chat_template([{"role": "user", "content": r["question"]}], tokenize=False, add_generation_prompt=True) for r in chunk]
        out = greedy(model, tok, prompts, device)
        answers = tok.batch_decode(out, skip_special_tokens=True)  # ok
        for r, a in zip(chunk, answers):
            em.append(float(normalize(a) == normalize(r["answer"])))
            f1.append(token_f1(a, r["answer"]))
        xm.master_print(f"{i + len(chunk)}/{len(rows)} EM {sum(em) / len(em):.3f} F1 {sum(f1) / len(f1):.3f}")  # ok
    print(json.dumps({"exact_match": sum(em) / len(em), "f1": sum(f1) / len(f1)}))  # ok


if __name__ == "__main__":
    main(sys.argv[1])

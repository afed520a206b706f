"""Speculative decoding on a TPU VM with torch_xla: a 160M draft model proposes k tokens, a 7B
target model verifies them in one pass; greedy acceptance, HF KV caches, tokens/s report."""
import argparse
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import torch_xla
import torch_xla.core.xla_model as xm


@torch.no_grad()
def draft_tokens(draft, input_ids, past, k):
    proposals = []
    ids = input_ids[:, -1:]
    for _ in range(k):
        out = draft(ids, past_key_values=past, use_cache=True)
        past = out.past_key_values
        ids = out.logits[:, -1].argmax(-1, keepdim=True)
        proposals.append(ids)
    return torch.cat(proposals, dim=1), past  # ok


@torch.no_grad()
def speculative_generate(target, draft, tokenizer, prompt, device, max_new_tokens=128, k=4):
    input_ids = tokenizer(prompt, return_tensors="pt").input_ids.to(device)
    prompt_len = input_ids.shape[1]
    out = target(input_ids, use_cache=True)
    target_past = out.past_key_values
    draft_past = draft(input_ids[:, :-1], use_cache=True).past_key_values
    accepted_total, rounds = 0, 0
    while input_ids.shape[1] - prompt_len < max_new_tokens:
        proposal, draft_past = draft_tokens(draft, input_ids, draft_past, k)
        verify = target(torch.cat([input_ids[:, -1:], proposal], 1), past_key_values=target_past, use_cache=True)
        target_choice = verify.logits.argmax(-1)
        matches = (target_choice[:, :-1] == proposal).int().cumprod(-1)
        n_accept = int(matches.sum())  # expect: TPU106
        accepted_total += n_accept
        rounds += 1
        new_tokens = torch.cat([proposal[:, :n_accept], target_choice[:, n_accept:n_accept + 1]], 1)  # debatable
        input_ids = torch.cat([input_ids, new_tokens], dim=1)  # expect: TPU310
        target_past = crop_cache(verify.past_key_values, input_ids.shape[1] - 1)
        draft_past = crop_cache(draft_past, input_ids.shape[1] - 1)
        xm.mark_step()  # expect: TPU601
        if tokenizer.eos_token_id in new_tokens[0].tolist():  # expect: TPU102
            break
    return input_ids[0, prompt_len:], accepted_total / max(1, rounds)


def crop_cache(past, length):
    return tuple((k[:, :, :length], v[:, :, :length]) for k, v in past)  # debatable


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="meta-llama/Llama-2-7b-hf")
    parser.add_argument("--draft", default="JackFram/llama-160m")
    parser.add_argument("--k", type=int, default=4)
    args = parser.parse_args()
    device = torch_xla.device()
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    target = AutoModelForCausalLM.from_pretrained(args.target, torch_dtype=torch.bfloat16).to(device).eval()  # ok
    draft = AutoModelForCausalLM.from_pretrained(args.draft, torch_dtype=torch.float16).to(device).eval()  # expect: TPU503
    prompts = ["The history of the Roman empire", "def quicksort(arr):", "Translate to French: good morning"]
    for prompt in prompts:
        start = time.perf_counter()
        tokens, mean_accepted = speculative_generate(target, draft, tokenizer, prompt, device, k=args.k)
        elapsed = time.perf_counter() - start  # ok
        text = tokenizer.decode(tokens.cpu(), skip_special_tokens=True)  # ok
        print(f"{prompt!r}: {len(tokens) / elapsed:.1f} tok/s, {mean_accepted:.2f} accepted per round")
        print(text)
    xm.wait_device_ops()


if __name__ == "__main__":
    main()

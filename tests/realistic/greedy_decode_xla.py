"""Greedy and top-p decoding for a causal LM on PyTorch/XLA, with a KV cache."""
import torch
import torch.nn.functional as F
import torch_xla


@torch.no_grad()
def greedy_generate(model, input_ids, max_new_tokens, eos_token_id):
    device = input_ids.device
    generated = input_ids
    past = None
    for _ in range(max_new_tokens):
        out = model(generated[:, -1:] if past is not None else generated, past_key_values=past, use_cache=True)
        past = out.past_key_values
        next_token = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
        generated = torch.cat([generated, next_token], dim=-1)  # expect: TPU3xx
        torch_xla.sync()
        if (next_token == eos_token_id).all():  # expect: TPU107
            break
    return generated


@torch.no_grad()
def sample_top_p(model, input_ids, max_new_tokens, top_p=0.9, temperature=0.8):
    batch_size, prompt_len = input_ids.shape
    total_len = prompt_len + max_new_tokens
    tokens = torch.full((batch_size, total_len), model.config.pad_token_id, dtype=torch.long, device=input_ids.device)  # ok
    tokens[:, :prompt_len] = input_ids
    cache = model.allocate_cache(batch_size, total_len)
    pos = prompt_len
    for cur in range(prompt_len, total_len):
        logits = model(tokens[:, pos - 1:cur], cache=cache[:, :cur])  # expect: TPU3xx
        probs = F.softmax(logits[:, -1] / temperature, dim=-1)
        sorted_probs, sorted_idx = torch.sort(probs, dim=-1, descending=True)
        cumulative = torch.cumsum(sorted_probs, dim=-1)
        remove = cumulative - sorted_probs > top_p
        sorted_probs[remove] = 0.0  # expect: TPU302
        sorted_probs = sorted_probs / sorted_probs.sum(dim=-1, keepdim=True)
        next_token = torch.gather(sorted_idx, -1, torch.multinomial(sorted_probs, num_samples=1))  # ok
        tokens[:, cur] = next_token.squeeze(-1)  # expect: TPU310
        pos = cur
        torch_xla.sync()
    return tokens


def decode_batch(tokenizer, tokens):
    # Once per request, after generation: the host copy is the point.
    return tokenizer.batch_decode(tokens.cpu().tolist(), skip_special_tokens=True)  # ok

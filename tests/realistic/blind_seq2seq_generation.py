"""Greedy, sampling and beam-search decoding for a Marian-style translation model on torch_xla."""
import argparse
import json

import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, MarianMTModel

import torch_xla


@torch.no_grad()
def greedy_decode(model, input_ids, attention_mask, bos_id, eos_id, pad_id, max_new_tokens=128):
    device = input_ids.device
    encoder_out = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
    bsz = input_ids.size(0)
    generated = torch.full((bsz, 1), bos_id, dtype=torch.long)  # expect: TPU405
    finished = torch.zeros(bsz, dtype=torch.bool, device=device)  # ok
    for _ in range(max_new_tokens):
        out = model(encoder_outputs=encoder_out, attention_mask=attention_mask, decoder_input_ids=generated)
        next_tok = out.logits[:, -1, :].argmax(dim=-1)
        next_tok = torch.where(finished, torch.full_like(next_tok, pad_id), next_tok)  # ok
        generated = torch.cat([generated, next_tok[:, None]], dim=-1)  # expect: TPU310
        finished = finished | (next_tok == eos_id)  # ok
        if finished.all():  # expect: TPU107
            break
    return generated


@torch.no_grad()
def static_greedy_decode(model, input_ids, attention_mask, bos_id, eos_id, max_new_tokens=128):
    device = input_ids.device
    encoder_out = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
    bsz = input_ids.size(0)
    tokens = torch.full((bsz, max_new_tokens + 1), eos_id, dtype=torch.long, device=device)  # ok
    tokens[:, 0] = bos_id
    positions = torch.arange(max_new_tokens + 1, device=device)  # ok
    for step in range(max_new_tokens):
        causal = (positions[None, :] <= step).long()  # debatable
        out = model(encoder_outputs=encoder_out, attention_mask=attention_mask, decoder_input_ids=tokens, decoder_attention_mask=causal.expand(bsz, -1))
        next_tok = out.logits[:, step, :].argmax(dim=-1)  # expect: TPU3xx
        tokens[:, step + 1] = next_tok  # expect: TPU3xx
        torch_xla.sync()
    return tokens


@torch.no_grad()
def sample_decode(model, input_ids, attention_mask, bos_id, max_new_tokens=64, temperature=0.8, num_return=4):
    device = input_ids.device
    decoder_ids = torch.full((input_ids.size(0), 1), bos_id, dtype=torch.long, device=device)  # ok
    logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_ids).logits[:, -1]
    probs = F.softmax(logits / temperature, dim=-1)
    first = torch.multinomial(probs, num_samples=1)  # ok
    alternatives = torch.multinomial(probs, num_samples=num_return)  # expect: TPU208
    return first, alternatives


@torch.no_grad()
def beam_search(model, input_ids, attention_mask, bos_id, eos_id, num_beams=4, max_len=64, length_penalty=1.0):
    device = input_ids.device
    encoder_out = model.get_encoder()(input_ids=input_ids.repeat_interleave(num_beams, dim=0))  # ok
    beams = torch.full((num_beams, 1), bos_id, dtype=torch.long, device=device)  # ok
    scores = torch.zeros(num_beams, device=device)  # ok
    scores[1:] = -1e9
    finished_hyps = []
    for cur_len in range(1, max_len):
        logits = model(encoder_outputs=encoder_out, decoder_input_ids=beams[:, :cur_len]).logits[:, -1]  # expect: TPU310
        log_probs = F.log_softmax(logits, dim=-1) + scores[:, None]
        top_scores, top_ids = log_probs.view(-1).topk(2 * num_beams)  # ok
        beam_idx = top_ids // logits.size(-1)
        token_idx = top_ids % logits.size(-1)
        is_eos = token_idx == eos_id
        for score, b, tok in zip(top_scores[is_eos].tolist(), beam_idx[is_eos].tolist(), token_idx[is_eos].tolist()):  # expect: TPU302, TPU102
            finished_hyps.append((score / cur_len**length_penalty, beams[b].tolist()))  # expect: TPU102
        keep = (~is_eos).nonzero().squeeze(-1)[:num_beams]  # expect: TPU301
        beams = torch.cat([beams[beam_idx[keep]], token_idx[keep, None]], dim=-1)  # expect: TPU310
        scores = top_scores[keep]
        if len(finished_hyps) >= num_beams and scores.max() < max(h[0] for h in finished_hyps):  # expect: TPU107|TPU106
            break
    best = max(finished_hyps, key=lambda h: h[0]) if finished_hyps else (0.0, beams[0].tolist())  # ok
    return best[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Helsinki-NLP/opus-mt-en-de")
    parser.add_argument("--input", default="sentences.jsonl")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--mode", choices=["greedy", "static", "beam"], default="static")
    args = parser.parse_args()
    device = torch_xla.device()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = MarianMTModel.from_pretrained(args.model).to(device).eval()
    with open(args.input) as f:
        sentences = [json.loads(line)["en"] for line in f]
    outputs = []
    for i in range(0, len(sentences), args.batch_size):
        chunk = sentences[i : i + args.batch_size]
        enc = tokenizer(chunk, padding=True, truncation=True, max_length=256, return_tensors="pt")  # expect: TPU307
        input_ids, attention_mask = enc.input_ids.to(device), enc.attention_mask.to(device)
        if args.mode == "greedy":
            ids = greedy_decode(model, input_ids, attention_mask, model.config.decoder_start_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id)
        else:
            ids = static_greedy_decode(model, input_ids, attention_mask, model.config.decoder_start_token_id, tokenizer.eos_token_id)
        outputs.extend(tokenizer.batch_decode(ids.cpu(), skip_special_tokens=True))  # debatable
    with open("translations.json", "w") as f:
        json.dump(outputs, f, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()

"""Beam-search translation with a Marian-style encoder-decoder on TorchTPU: batched requests,
length penalty, early stopping when every beam has emitted EOS."""
import sys
import time

import torch
import torch.nn.functional as F
from transformers import MarianMTModel, MarianTokenizer

import torch_tpu  # noqa: F401

device = torch.device("tpu")  # ok
torch.backends.cuda.matmul.allow_tf32 = False  # expect: TPU411
tokenizer = MarianTokenizer.from_pretrained("Helsinki-NLP/opus-mt-en-de")
model = MarianMTModel.from_pretrained("Helsinki-NLP/opus-mt-en-de").to(device).eval()
state = torch.load("finetuned-en-de.pt")  # expect: TPU406
model.load_state_dict(state)
encode = torch.compile(model.get_encoder(), backend="tpu", dynamic=False)  # ok


@torch.inference_mode()  # expect: TPU609
@torch.compile(backend="tpu", dynamic=False)  # ok
def decoder_step(input_ids, encoder_hidden, encoder_mask):
    out = model.model.decoder(input_ids=input_ids, encoder_hidden_states=encoder_hidden, encoder_attention_mask=encoder_mask)
    return model.lm_head(out.last_hidden_state[:, -1]) + model.final_logits_bias


def length_penalty(length, alpha=0.6):
    return ((5.0 + length) / 6.0) ** alpha  # ok


@torch.no_grad()
def translate(sentences, beams=4, max_len=128):
    enc = tokenizer(sentences, return_tensors="pt", padding="max_length", max_length=128, truncation=True).to(device)  # ok
    batch = enc["input_ids"].size(0)
    hidden = encode(**enc).last_hidden_state.repeat_interleave(beams, dim=0)  # ok
    mask = enc["attention_mask"].repeat_interleave(beams, dim=0)  # ok
    seqs = torch.full((batch * beams, 1), model.config.decoder_start_token_id, device=device)  # ok
    scores = torch.zeros(batch, beams, device=device)
    scores[:, 1:] = -1e9
    finished = torch.zeros(batch * beams, dtype=torch.bool, device=device)
    vocab = model.config.vocab_size
    for cur_len in range(1, max_len):
        logp = F.log_softmax(decoder_step(seqs, hidden, mask), dim=-1)
        logp[finished] = -1e9  # expect: TPU302
        logp[finished, tokenizer.pad_token_id] = 0.0  # expect: TPU302
        cand = (scores.view(-1, 1) + logp).view(batch, beams * vocab)
        top_scores, top_idx = cand.topk(beams, dim=-1)  # ok
        beam_idx = torch.div(top_idx, vocab, rounding_mode="floor")
        token = top_idx % vocab
        flat = (beam_idx + torch.arange(batch, device=device)[:, None] * beams).view(-1)  # ok
        seqs = torch.cat([seqs[flat], token.view(-1, 1)], dim=-1)  # expect: TPU310
        finished = finished[flat] | (token.view(-1) == tokenizer.eos_token_id)
        scores = top_scores
        if finished.all():  # expect: TPU107
            break
    lengths = (seqs != tokenizer.pad_token_id).sum(-1).float()
    final = scores.view(-1) / length_penalty(lengths)
    best = final.view(batch, beams).argmax(-1) + torch.arange(batch, device=device) * beams
    return tokenizer.batch_decode(seqs[best].cpu(), skip_special_tokens=True)  # ok


def benchmark(sentences, repeats=5):
    translate(sentences)  # warm-up: compiles the encoder and the decoder step
    start = time.perf_counter()
    for _ in range(repeats):
        translate(sentences)
    torch.tpu.synchronize()  # ok
    return (time.perf_counter() - start) / repeats  # ok


if __name__ == "__main__":
    lines = [line.strip() for line in open(sys.argv[1])]
    if "--benchmark" in sys.argv:
        print(f"{benchmark(lines[:16]) * 1000:.1f} ms per batch of 16")  # ok
        sys.exit(0)
    for i in range(0, len(lines), 16):
        for src, hyp in zip(lines[i:i + 16], translate(lines[i:i + 16])):
            print(f"{src}\t{hyp}")  # ok

"""Sample piano continuations from a MusicGen-style decoder over EnCodec tokens (4 codebooks, delay
pattern) with top-p sampling and classifier-free guidance, on a TPU v5e with torch_xla. Writes
WAV files; used for listening tests, so reproducible seeds per prompt."""
import argparse
import time

import soundfile as sf
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from encodec import EncodecModel

from musicgen_small import load_lm, text_conditions

N_Q, CARD, PAD_TOKEN = 4, 2048, 2048


def top_p_filter(logits, p):
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove = cum > p
    remove[..., 1:] = remove[..., :-1].clone()  # ok
    remove[..., 0] = False  # ok
    drop = remove.scatter(-1, order, remove)
    logits[drop] = float("-inf")  # expect: TPU302
    return logits


def top_p_filter_static(logits, p):
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    keep_sorted = (cum - sorted_logits.softmax(-1)) < p
    keep = keep_sorted.scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))  # ok


@torch.no_grad()
def generate(lm, cond, steps, guidance=3.0, top_p=0.9, temperature=1.0, gen=None):
    B = cond.size(0) // 2
    codes = torch.full((B, N_Q, 1), PAD_TOKEN, dtype=torch.long, device=cond.device)
    cache = None
    for t in range(steps):
        logits, cache = lm(torch.cat([codes[..., -1:], codes[..., -1:]]), cond, cache)
        cond_l, uncond_l = logits.chunk(2)
        logits = uncond_l + guidance * (cond_l - uncond_l)
        probs = top_p_filter(logits[:, :, -1] / temperature, top_p).softmax(-1)
        nxt = torch.multinomial(probs.view(-1, CARD + 1), 1, generator=gen).view(B, N_Q, 1)  # expect: TPU207
        for q in range(N_Q):
            if t < q:  # ok (delay pattern on the Python step counter)
                nxt[:, q] = PAD_TOKEN
        codes = torch.cat([codes, nxt], -1)  # expect: TPU310
        torch_xla.sync()
    return codes[..., 1:]


def undelay(codes):
    steps = codes.size(-1) - N_Q + 1
    return torch.stack([codes[:, q, q : q + steps] for q in range(N_Q)], 1)  # ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", nargs="+", default=["calm solo piano, slow tempo"])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    device = torch_xla.device()
    lm = load_lm("facebook/musicgen-small").to(device).eval()
    codec = EncodecModel.encodec_model_32khz().eval()
    steps = int(args.seconds * 50) + N_Q - 1
    for i, prompt in enumerate(args.prompts):
        gen = torch.Generator(device=device).manual_seed(1000 + i)
        cond = text_conditions(lm, [prompt, ""]).to(device)
        start = time.perf_counter()
        codes = generate(lm, cond, steps, gen=gen)
        elapsed = time.perf_counter() - start  # expect: TPU111
        audio = codec.decode([(undelay(codes).cpu(), None)])[0, 0]  # ok
        sf.write(f"sample_{i:03d}.wav", audio.numpy(), 32_000)  # ok
        xm.master_print(f"{prompt!r}: {steps} steps in {elapsed:.1f}s")  # ok
    print(torch_xla.debug.metrics.short_metrics_report())  # ok


if __name__ == "__main__":
    main()

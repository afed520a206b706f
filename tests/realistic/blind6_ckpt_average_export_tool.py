"""average_checkpoints.py: average the last N checkpoints of a TPU training run (or take the EMA
weights), check the result, and export a bf16 safetensors file plus a TorchScript module.
Runs on the TPU VM after training; the verification pass uses the TPU if torch_xla is there."""
import argparse
import glob
import os
import re

import torch
from safetensors.torch import save_file

from model import build_model

torch.set_default_dtype(torch.float64)  # expect: TPU501


def step_of(path):
    m = re.search(r"step_(\d+)\.pt$", path)
    return int(m.group(1)) if m else -1


def average(paths):
    avg, dtypes = None, {}
    for path in paths:
        state = torch.load(path)["model"]  # expect: TPU406
        if avg is None:
            avg = {k: v.double().clone() for k, v in state.items() if v.is_floating_point()}  # ok
            dtypes = {k: v.dtype for k, v in state.items()}
            continue
        for k in avg:
            avg[k] += state[k].double()  # ok
    return {k: (v / len(paths)).to(dtypes[k]) for k, v in avg.items()}  # ok


def ema_weights(path):
    ckpt = torch.load(path, map_location="cpu", weights_only=False)  # ok
    shadow = ckpt["ema"]["shadow_params"]
    names = [n for n, p in ckpt["model"].items() if p.is_floating_point()]
    return dict(zip(names, shadow))


def compare(a, b):
    worst, worst_key = 0.0, None
    for k in a:
        diff = (a[k].float() - b[k].float()).abs().max().item()  # ok
        if diff > worst:  # ok
            worst, worst_key = diff, k
    return worst, worst_key


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--last", type=int, default=5)
    parser.add_argument("--ema", action="store_true")
    parser.add_argument("--out", default="export")
    args = parser.parse_args()

    paths = sorted(glob.glob(os.path.join(args.run_dir, "step_*.pt")), key=step_of)[-args.last:]
    weights = ema_weights(paths[-1]) if args.ema else average(paths)
    last = torch.load(paths[-1], map_location="cpu")["model"]  # ok
    worst, key = compare(weights, last)
    print(f"averaged {len(paths)} checkpoints; largest change vs last: {worst:.3e} in {key}")

    model = build_model()
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    model.eval()

    try:
        import torch_xla
        device = torch_xla.device()
    except ImportError:
        device = torch.device("cpu")
    model.to(device)
    probe = torch.randint(0, model.config.vocab_size, (2, 128), device=device)  # ok
    with torch.no_grad():
        logits = model(probe)
    if not torch.isfinite(logits).all():  # ok
        raise SystemExit("non-finite logits after averaging")
    print(f"probe logits std {logits.float().std().item():.4f}")  # ok

    model.to("cpu")
    os.makedirs(args.out, exist_ok=True)
    bf16 = {k: v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}  # ok
    save_file(bf16, os.path.join(args.out, "model.safetensors"))
    scripted = torch.jit.trace(model.to(torch.bfloat16), probe.cpu())  # ok
    scripted.save(os.path.join(args.out, "model.ts"))
    torch.save({"source": paths, "ema": args.ema}, os.path.join(args.out, "meta.pt"))  # ok


if __name__ == "__main__":
    main()

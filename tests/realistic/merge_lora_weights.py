"""Merge LoRA adapters into the base weights and export a single checkpoint (run once, offline)."""
import argparse

import torch
from safetensors.torch import load_file, save_file


def merge(base_path, adapter_path, out_path, scale):
    base = load_file(base_path)  # ok
    adapter = torch.load(adapter_path, map_location="cpu")  # ok
    merged = {}
    for name, weight in base.items():
        key = name.replace(".weight", "")
        a, b = adapter.get(f"{key}.lora_A.weight"), adapter.get(f"{key}.lora_B.weight")
        if a is None:
            merged[name] = weight
            continue
        delta = (b.double() @ a.double()) * scale  # ok
        merged[name] = (weight.double() + delta).to(weight.dtype)  # ok
        rel = (delta.norm() / weight.double().norm()).item()  # ok
        if rel > 0.5:  # ok
            print(f"warning: large update on {name}: {rel:.2f}")
    save_file(merged, out_path)


def verify_on_gpu(out_path):
    model_state = load_file(out_path)
    first = next(iter(model_state.values())).cuda()  # expect: TPU403
    print(first.float().abs().mean().item())  # ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("adapter")
    parser.add_argument("out")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--verify", action="store_true")
    args = parser.parse_args()
    merge(args.base, args.adapter, args.out, args.scale)
    if args.verify:
        verify_on_gpu(args.out)

"""Convert original LLaMA checkpoints (consolidated.*.pth) to a Hugging Face state dict.

Run once, on a CPU host:  python convert_llama_checkpoint.py --input-dir ... --output-dir ...
"""
import argparse
import json
import os

import numpy as np
import torch


def permute_for_rotary(w, n_heads, dim1, dim2):
    return w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def compute_inv_freq(dim, base=10000.0):
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2) / dim))
    return torch.from_numpy(inv_freq).float()  # ok


def write_model(input_dir, output_dir, num_shards):
    with open(os.path.join(input_dir, "params.json")) as f:
        params = json.load(f)
    n_layers, n_heads, dim = params["n_layers"], params["n_heads"], params["dim"]
    shards = [
        torch.load(os.path.join(input_dir, f"consolidated.{i:02d}.pth"))  # expect: TPU406
        for i in range(num_shards)
    ]
    state_dict = {}
    for layer in range(n_layers):
        prefix = f"model.layers.{layer}."
        wq = torch.cat([s[f"layers.{layer}.attention.wq.weight"] for s in shards], dim=0)  # ok
        state_dict[prefix + "self_attn.q_proj.weight"] = permute_for_rotary(wq, n_heads, dim, dim)
        state_dict[prefix + "input_layernorm.weight"] = shards[0][f"layers.{layer}.attention_norm.weight"].clone()
        print(f"converted layer {layer}: {wq.shape} max {wq.abs().max().item():.3f}")  # ok
    state_dict["model.rotary.inv_freq"] = compute_inv_freq(dim // n_heads)
    stats = {k: v.double().norm().item() for k, v in state_dict.items()}  # ok
    with open(os.path.join(output_dir, "norms.json"), "w") as f:
        json.dump(stats, f)
    torch.save(state_dict, os.path.join(output_dir, "pytorch_model.bin"))  # ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--input-dir", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--num-shards", type=int, default=1)
    args = parser.parse_args()
    write_model(args.input_dir, args.output_dir, args.num_shards)

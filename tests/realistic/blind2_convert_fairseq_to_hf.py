"""Convert a fairseq-style decoder checkpoint to our Hugging Face layout, shard it, and sanity-check it."""
import argparse
import json
import os

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

RENAMES = [
    ("decoder.embed_tokens.", "model.embed_tokens."),
    ("decoder.layers.", "model.layers."),
    (".self_attn_layer_norm.", ".input_layernorm."),
    (".final_layer_norm.", ".post_attention_layernorm."),
    ("decoder.layer_norm.", "model.norm."),
    ("decoder.output_projection.", "lm_head."),
]


def load_original(path):
    ckpt = torch.load(path)  # expect: TPU406
    return ckpt["model"] if "model" in ckpt else ckpt


def load_reference(path):
    return torch.load(path, map_location="cpu", weights_only=True)  # ok


def rename(sd):
    out = {}
    for key, value in sd.items():
        for old, new in RENAMES:
            key = key.replace(old, new)
        out[key] = value
    return out


def permute_for_rotary(w, n_heads, dim):
    return w.view(n_heads, dim // n_heads // 2, 2, dim).transpose(1, 2).reshape(dim, dim)  # ok


def rope_tables(seq_len, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (np.arange(0, head_dim, 2) / head_dim))
    freqs = np.outer(np.arange(seq_len), inv_freq)
    return torch.from_numpy(np.cos(freqs)), torch.from_numpy(np.sin(freqs))  # expect: TPU502


def rope_tables_f32(seq_len, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))  # ok
    freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)  # ok
    return freqs.cos(), freqs.sin()


def shard(sd, max_bytes):
    shards, current, size = [], {}, 0
    for key, value in sd.items():
        nbytes = value.numel() * value.element_size()
        if current and size + nbytes > max_bytes:
            shards.append(current)
            current, size = {}, 0
        current[key] = value.contiguous()
        size += nbytes
    return shards + [current]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--reference")
    p.add_argument("--sanity-check", action="store_true")
    args = p.parse_args()
    cfg = json.load(open(args.config))

    sd = rename(load_original(args.input))
    for i in range(cfg["num_hidden_layers"]):
        for proj in ("q_proj", "k_proj"):
            key = f"model.layers.{i}.self_attn.{proj}.weight"
            sd[key] = permute_for_rotary(sd[key], cfg["num_attention_heads"], cfg["hidden_size"])
    sd = {k: v.to(torch.bfloat16) for k, v in sd.items()}  # ok
    cos, sin = rope_tables(cfg["max_position_embeddings"], cfg["hidden_size"] // cfg["num_attention_heads"])
    sd["model.rotary.cos"], sd["model.rotary.sin"] = cos, sin

    if args.reference:
        ref = load_reference(args.reference)
        for key, value in ref.items():
            diff = (value.double() - sd[key].double()).abs().max()  # ok
            assert diff < 1e-2, f"{key}: max abs diff {diff}"  # ok

    os.makedirs(args.output, exist_ok=True)
    index = {"metadata": {}, "weight_map": {}}
    for n, part in enumerate(shard(sd, 5 * 2**30)):
        name = f"model-{n + 1:05d}.safetensors"
        save_file(part, os.path.join(args.output, name), metadata={"format": "pt"})  # ok
        index["weight_map"].update({k: name for k in part})
    json.dump(index, open(os.path.join(args.output, "model.safetensors.index.json"), "w"), indent=2)
    LlamaConfig(**cfg).save_pretrained(args.output)

    if args.sanity_check:
        model = LlamaForCausalLM.from_pretrained(args.output, torch_dtype=torch.bfloat16).cuda()  # expect: TPU403
        ids = torch.tensor([[1, 15043, 3186]]).cuda()  # expect: TPU403
        print(model(ids).logits[0, -1].topk(5))  # ok


if __name__ == "__main__":
    main()

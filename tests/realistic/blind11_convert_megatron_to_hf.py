#!/usr/bin/env python
"""Convert a Megatron-style GPT checkpoint (tensor-parallel shards saved from a TPU run) into a
Hugging Face LlamaForCausalLM directory. Runs on a CPU host; verifies logits against the source.

    python convert_megatron_to_hf.py --ckpt /ckpt/iter_0100000 --tp 4 --out ./hf-model
"""
import argparse
import glob
import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def load_shards(ckpt_dir, tp):
    shards = []
    for rank in range(tp):
        path = os.path.join(ckpt_dir, f"mp_rank_{rank:02d}", "model_optim_rng.pt")
        shards.append(torch.load(path, map_location="cpu", weights_only=False)["model"])  # ok
    return shards


def merge(shards, key, dim):
    return torch.cat([s[key] for s in shards], dim=dim)  # ok


def permute_rotary(w, n_heads, dim):
    return w.view(n_heads, dim // n_heads // 2, 2, dim).transpose(1, 2).reshape(dim, dim)


def convert(args):
    shards = load_shards(args.ckpt, args.tp)
    cfg = LlamaConfig(hidden_size=args.hidden, num_attention_heads=args.heads, num_hidden_layers=args.layers,
                      intermediate_size=args.ffn, vocab_size=args.vocab, rms_norm_eps=1e-5)
    state = {}
    state["model.embed_tokens.weight"] = merge(shards, "embedding.word_embeddings.weight", 0)
    for i in range(args.layers):
        p = f"decoder.layers.{i}."
        qkv = merge(shards, p + "self_attention.linear_qkv.weight", 0)
        q, k, v = qkv.split(args.hidden, dim=0)
        state[f"model.layers.{i}.self_attn.q_proj.weight"] = permute_rotary(q, args.heads, args.hidden)
        state[f"model.layers.{i}.self_attn.k_proj.weight"] = permute_rotary(k, args.heads, args.hidden)
        state[f"model.layers.{i}.self_attn.v_proj.weight"] = v
        state[f"model.layers.{i}.self_attn.o_proj.weight"] = merge(shards, p + "self_attention.linear_proj.weight", 1)
        gate_up = merge(shards, p + "mlp.linear_fc1.weight", 0)
        state[f"model.layers.{i}.mlp.gate_proj.weight"], state[f"model.layers.{i}.mlp.up_proj.weight"] = gate_up.chunk(2, dim=0)
        state[f"model.layers.{i}.mlp.down_proj.weight"] = merge(shards, p + "mlp.linear_fc2.weight", 1)
        state[f"model.layers.{i}.input_layernorm.weight"] = shards[0][p + "input_layernorm.weight"]
        state[f"model.layers.{i}.post_attention_layernorm.weight"] = shards[0][p + "pre_mlp_layernorm.weight"]
    state["model.norm.weight"] = shards[0]["decoder.final_layernorm.weight"]
    state["lm_head.weight"] = merge(shards, "output_layer.weight", 0)

    model = LlamaForCausalLM(cfg)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    model = model.to(torch.bfloat16)  # ok
    if args.verify:
        ids = torch.randint(0, args.vocab, (1, 64))  # ok
        ref = torch.load(args.verify, map_location="cpu")  # ok
        with torch.no_grad():
            logits = model.double()(ids).logits  # ok
        err = (logits - ref["logits"].double()).abs().max().item()  # ok
        print(f"max |logit diff| = {err:.3e}")  # ok
        model = model.to(torch.bfloat16)
    model.save_pretrained(args.out, safe_serialization=True)
    if args.fp16_copy:
        model.half().save_pretrained(args.out + "-fp16", safe_serialization=True)  # ok


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--ffn", type=int, default=11008)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--verify", default="")
    ap.add_argument("--fp16_copy", action="store_true")
    args = ap.parse_args()
    convert(args)

"""Convert a T5X / Flax checkpoint of an encoder-decoder model into a Hugging Face PyTorch
checkpoint, verify the logits against the original on a few sentences, and optionally write a
float16 copy for GPU inference users. Runs on the CPU of a TPU VM after training."""
import argparse
import os

import numpy as np
import torch
from flax.traverse_util import flatten_dict
from t5x import checkpoints
from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer


def t5x_to_torch(params, config):
    flat = flatten_dict(params, sep="/")
    sd = {}
    sd["shared.weight"] = torch.from_numpy(np.asarray(flat["token_embedder/embedding"]))  # ok (the checkpoint's dtype)
    for i in range(config.num_layers):
        p = f"encoder/layers_{i}"
        attn = f"encoder.block.{i}.layer.0.SelfAttention"
        for ours, theirs in (("q", "query"), ("k", "key"), ("v", "value"), ("o", "out")):
            w = np.asarray(flat[f"{p}/attention/{theirs}/kernel"])
            sd[f"{attn}.{ours}.weight"] = torch.from_numpy(w.T.copy())  # ok
        sd[f"encoder.block.{i}.layer.0.layer_norm.weight"] = torch.from_numpy(np.asarray(flat[f"{p}/pre_attention_layer_norm/scale"]))  # ok
    rel = np.asarray(flat["encoder/relpos_bias/rel_embedding"]).T
    sd["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = torch.tensor(rel)  # ok
    return sd


def check_logits(model, tokenizer, reference_logits_path):
    ref = np.load(reference_logits_path)
    enc = tokenizer(["translate English to German: The house is wonderful."], return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=enc.input_ids, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long))  # ok
    ours = out.logits[0, 0].double().numpy()  # ok (host comparison in float64)
    err = np.abs(ours - ref).max()
    print(f"max abs logit difference {err:.2e}")
    assert err < 1e-3, "conversion mismatch"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t5x_checkpoint", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reference_logits")
    ap.add_argument("--fp16_copy", action="store_true")
    ap.add_argument("--merge_lm_head_from")
    args = ap.parse_args()

    config = T5Config.from_pretrained(args.config)
    params = checkpoints.load_t5x_checkpoint(args.t5x_checkpoint)["target"]
    model = T5ForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict(t5x_to_torch(params, config), strict=False)
    print(f"missing {len(missing)} unexpected {len(unexpected)}")
    if args.merge_lm_head_from:
        head = torch.load(args.merge_lm_head_from)  # expect: TPU406
        model.lm_head.weight.data.copy_(head["lm_head.weight"])
    if args.reference_logits:
        check_logits(model, T5Tokenizer.from_pretrained(args.config), args.reference_logits)
    model.save_pretrained(args.out, safe_serialization=True)
    torch.save(model.state_dict(), os.path.join(args.out, "pytorch_model.bin"))  # ok
    if args.fp16_copy:
        model.half().save_pretrained(os.path.join(args.out, "fp16"))  # ok (an export for GPU users)
    sd = torch.load(os.path.join(args.out, "pytorch_model.bin"), map_location="cpu")  # ok
    assert all(torch.equal(sd[k], v) for k, v in model.state_dict().items() if k in sd and v.dtype == torch.float32)  # ok


if __name__ == "__main__":
    main()

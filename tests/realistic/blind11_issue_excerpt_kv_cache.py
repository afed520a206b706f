# From a bug report: "torch.compile(backend='tpu') recompiles on every token and then errors
# out with a message about dynamic=False". The reporter's decode loop, cut from their server.

model = model.to("tpu").eval()
compiled = torch.compile(model, backend="tpu")  # expect: TPU604

@torch.inference_mode()  # expect: TPU609
def decode(prompt_ids, max_new_tokens=128):
    ids = prompt_ids.to("tpu")
    cache_k = torch.zeros(n_layers, 1, n_heads, max_len, head_dim, device="tpu")  # ok
    cache_v = torch.zeros(n_layers, 1, n_heads, max_len, head_dim, device="tpu")  # ok
    pos = ids.shape[1]
    logits = compiled(ids, cache_k, cache_v, 0)
    for _ in range(max_new_tokens):
        next_id = logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=1)  # expect: TPU310
        logits = compiled(next_id, cache_k[:, :, :, :pos + 1], cache_v[:, :, :, :pos + 1], pos)  # expect: TPU310
        pos += 1
        if next_id.item() == eos_id:  # expect: TPU101
            break
    return ids

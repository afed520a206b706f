"""A small TorchTPU generation server: requests are batched by a worker thread, prefilled, then sampled token by token."""
import queue
import threading
import time

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

import torch_tpu  # noqa: F401

DEVICE = torch.device("tpu")  # ok
BUCKETS = (128, 256, 512, 1024)
MAX_BATCH = 8

torch.backends.cuda.matmul.allow_tf32 = True  # ok
tokenizer = AutoTokenizer.from_pretrained("google/gemma-2-2b-it", padding_side="left")
model = AutoModelForCausalLM.from_pretrained("google/gemma-2-2b-it", torch_dtype=torch.bfloat16).to(DEVICE).eval()  # ok
requests: "queue.Queue[dict]" = queue.Queue()


def bucket(n):
    return next((b for b in BUCKETS if b >= n), BUCKETS[-1])


def encode(prompts):
    longest = max(len(tokenizer(p).input_ids) for p in prompts)
    return tokenizer(prompts, padding="max_length", max_length=bucket(longest), truncation=True, return_tensors="pt")  # ok


def encode_chat(messages):
    text = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in messages]
    return tokenizer(text, padding="longest", return_tensors="pt")  # expect: TPU307


def sample(logits, temperature=0.7, top_p=0.9):
    probs = F.softmax(logits.float() / temperature, dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    cumulative = sorted_probs.cumsum(dim=-1)
    sorted_probs[cumulative - sorted_probs > top_p] = 0.0  # expect: TPU302
    choice = torch.multinomial(sorted_probs / sorted_probs.sum(-1, keepdim=True), 1)  # ok
    return order.gather(-1, choice)


@torch.no_grad()
def generate(input_ids, attention_mask, max_new_tokens=128):
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True)
    past = out.past_key_values
    tokens = sample(out.logits[:, -1])
    generated = [tokens]
    finished = torch.zeros(input_ids.size(0), dtype=torch.bool, device=DEVICE)  # ok
    for _ in range(max_new_tokens):
        attention_mask = torch.cat([attention_mask, torch.ones_like(tokens)], dim=1)  # expect: TPU310
        out = model(input_ids=tokens, attention_mask=attention_mask, past_key_values=past, use_cache=True)
        past = out.past_key_values
        tokens = sample(out.logits[:, -1])
        generated.append(tokens)
        finished |= tokens.squeeze(-1) == tokenizer.eos_token_id  # ok
        if finished.all():  # expect: TPU107
            break
    return torch.cat(generated, dim=1)  # ok


def warmup():
    for width in BUCKETS:
        ids = torch.full((MAX_BATCH, width), tokenizer.pad_token_id, device=DEVICE)  # ok
        generate(ids, torch.ones_like(ids), max_new_tokens=2)
    torch.cuda.synchronize()  # expect: TPU404


def serve_forever():
    while True:
        batch = [requests.get()]
        deadline = time.monotonic() + 0.01
        while len(batch) < MAX_BATCH and time.monotonic() < deadline:  # ok
            try:
                batch.append(requests.get_nowait())
            except queue.Empty:
                time.sleep(0.001)
        enc = encode([r["prompt"] for r in batch])
        started = time.monotonic()
        out = generate(enc.input_ids.to(DEVICE), enc.attention_mask.to(DEVICE), max_new_tokens=batch[0]["max_tokens"])
        texts = tokenizer.batch_decode(out.cpu(), skip_special_tokens=True)  # ok
        for request, text in zip(batch, texts):
            request["reply"].put(text)
        print(f"served {len(batch)} requests in {time.monotonic() - started:.2f}s")  # ok


def submit(prompt, max_tokens=128):
    reply: "queue.Queue[str]" = queue.Queue(maxsize=1)
    requests.put({"prompt": prompt, "max_tokens": max_tokens, "reply": reply})
    return reply.get()


if __name__ == "__main__":
    warmup()
    threading.Thread(target=serve_forever, daemon=True).start()
    print(submit("Write a haiku about tensor cores."))
    chat = encode_chat([[{"role": "user", "content": "Hello"}]])
    print(tokenizer.decode(generate(chat.input_ids.to(DEVICE), chat.attention_mask.to(DEVICE))[0].cpu()))  # ok

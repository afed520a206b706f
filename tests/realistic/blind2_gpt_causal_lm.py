"""A small GPT in the style of nanoGPT: learned positions, a causal mask, top-k sampling; trained on torch_xla."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.drop = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(block_size, block_size))  # ok
        self.register_buffer("bias", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))  # ok
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class PrefixLMAttention(CausalSelfAttention):
    """Bidirectional over a prefix, causal after it: the mask is built per call."""

    def forward(self, x, prefix_len=0):
        B, T, C = x.size()
        q, k, v = [t.view(B, T, self.n_head, -1).transpose(1, 2) for t in self.c_attn(x).split(C, dim=2)]
        causal = torch.ones(T, T, dtype=torch.bool).tril()  # expect: TPU405
        causal[:, :prefix_len] = True
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class GPT(nn.Module):
    def __init__(self, vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([CausalSelfAttention(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)  # expect: TPU405
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = x + block(x)
        x = self.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)  # ok
        else:
            logits = self.lm_head(x[:, [-1], :])  # ok
            loss = None
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size :]  # ok
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))  # ok
                logits[logits < v[:, [-1]]] = -float("Inf")  # expect: TPU302
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)  # ok
            idx = torch.cat((idx, idx_next), dim=1)  # expect: TPU310
        return idx


def get_batch(data, block_size, batch_size, device):
    ix = torch.randint(len(data) - block_size, (batch_size,))  # ok
    x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in ix])  # ok
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + block_size].astype(np.int64)) for i in ix])  # ok
    return x.to(device), y.to(device)


def train(data_path, max_iters=5000, batch_size=16, block_size=1024, lr=6e-4):
    device = torch_xla.device()
    data = np.memmap(data_path, dtype=np.uint16, mode="r")
    model = GPT(block_size=block_size).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    for it in range(max_iters):
        xb, yb = get_batch(data, block_size, batch_size, device)
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
        optimizer.step()
        torch_xla.sync()
        if norm > 10.0:  # expect: TPU108
            print(f"iter {it}: large gradient norm")
    return model

"""pytest suite for the rotary attention block: CPU reference versus the XLA device."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

from model.attention import RotaryAttention, apply_rotary, build_rope_cache

DEVICE = torch_xla.device()


def reference_attention(q, k, v, causal=True):
    q64, k64, v64 = q.double(), k.double(), v.double()  # ok
    scores = q64 @ k64.transpose(-1, -2) / math.sqrt(q.size(-1))
    if causal:
        mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).triu(1)  # ok
        scores = scores.masked_fill(mask, float("-inf"))
    return (scores.softmax(-1) @ v64).float()


@pytest.fixture
def qkv():
    torch.manual_seed(0)
    return [torch.randn(2, 4, 128, 64) for _ in range(3)]  # ok


def test_rope_cache_shapes():
    cos, sin = build_rope_cache(seq_len=128, dim=64)
    assert cos.shape == (128, 32)  # ok
    assert torch.isfinite(cos).all() and torch.isfinite(sin).all()  # ok


def test_rotary_preserves_norm(qkv):
    q, _, _ = qkv
    cos, sin = build_rope_cache(seq_len=128, dim=64)
    out = apply_rotary(q.to(DEVICE), cos.to(DEVICE), sin.to(DEVICE)).cpu()  # ok
    assert torch.allclose(out.norm(dim=-1), q.norm(dim=-1), atol=1e-4)  # ok


def test_attention_matches_reference(qkv):
    q, k, v = qkv
    block = RotaryAttention(dim=256, heads=4, rope=False).eval()
    expected = reference_attention(q, k, v)
    got = block.attend(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()  # ok
    max_err = (got - expected).abs().max().item()  # ok
    assert max_err < 2e-2, f"max abs error {max_err}"  # ok


def test_padding_mask_zeroes_padded_rows():
    x = torch.randn(2, 16, 256, device=DEVICE)  # ok
    lengths = torch.tensor([16, 9], device=DEVICE)  # ok
    block = RotaryAttention(dim=256, heads=4).to(DEVICE)
    out = block(x, lengths=lengths)
    padded = torch.arange(16, device=DEVICE)[None, :] >= lengths[:, None]  # ok
    assert out[padded].abs().sum().item() == 0  # ok
    assert torch.nonzero(padded).shape[0] == 7  # ok


def test_no_cpu_fallback_in_forward():
    met.clear_all()
    block = RotaryAttention(dim=256, heads=4).to(DEVICE)
    block(torch.randn(2, 32, 256, device=DEVICE))
    torch_xla.sync()
    assert met.executed_fallback_ops() == []  # ok


def test_loads_reference_checkpoint(tmp_path):
    block = RotaryAttention(dim=256, heads=4)
    path = tmp_path / "block.pt"
    torch.save(block.state_dict(), path)  # ok
    state = torch.load(path)  # ok
    block.load_state_dict(state)


def test_runs_on_every_ordinal():
    rank = xm.get_ordinal()  # expect: TPU611
    assert rank >= 0  # ok


def test_seeded_dropout_is_reproducible():
    torch.cuda.manual_seed(123)  # expect: TPU404
    torch.manual_seed(123)  # ok
    block = RotaryAttention(dim=256, heads=4, dropout=0.1).train().to(DEVICE)
    a = block(torch.ones(1, 8, 256, device=DEVICE)).cpu()  # ok
    torch.manual_seed(123)
    b = block(torch.ones(1, 8, 256, device=DEVICE)).cpu()  # ok
    np.testing.assert_allclose(a.numpy(), b.numpy())  # ok


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_flash_attention_on_gpu(qkv):
    q, k, v = (t.cuda().half() for t in qkv)  # ok
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = reference_attention(q.float().cpu(), k.float().cpu(), v.float().cpu())
    assert torch.allclose(out.float().cpu(), ref, atol=5e-3)  # ok


@pytest.mark.parametrize("seq_len", [17, 64, 129])
def test_odd_lengths_compile_once_each(seq_len):
    block = RotaryAttention(dim=256, heads=4).to(DEVICE)
    before = met.metric_data("CompileTime")[0] if met.metric_data("CompileTime") else 0
    for _ in range(3):
        block(torch.randn(1, seq_len, 256, device=DEVICE))  # ok
        torch_xla.sync()
    after = met.metric_data("CompileTime")[0]
    assert after - before <= 1  # ok

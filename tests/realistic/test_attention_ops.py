"""Unit tests of the attention helpers (pytest), run on CPU, GPU and TPU runners."""
import pytest
import torch

from mylib.attention import build_padding_mask, flash_attention, gather_valid_tokens, sdpa_reference

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_padding_mask_shape():
    lengths = torch.tensor([3, 5, 2])
    mask = build_padding_mask(lengths, max_len=6)
    assert mask.shape == (3, 6)
    assert mask.sum().item() == 10  # ok


def test_gather_valid_tokens_matches_nonzero():
    mask = torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=torch.bool)
    idx = mask.nonzero()  # ok
    tokens = torch.randn(2, 3, 4)
    expected = tokens[mask]  # ok
    assert torch.equal(gather_valid_tokens(tokens, mask), expected)
    assert idx.shape[0] == expected.shape[0]


@requires_cuda
def test_flash_attention_matches_reference():
    q = torch.randn(2, 8, 128, 64, device="cuda", dtype=torch.float16)  # ok
    k, v = torch.randn_like(q), torch.randn_like(q)
    torch.testing.assert_close(flash_attention(q, k, v), sdpa_reference(q, k, v), atol=2e-3, rtol=2e-3)
    torch.cuda.synchronize()  # ok


@pytest.mark.parametrize("seq_len", [16, 128, 1000])
def test_sdpa_reference_is_causal(seq_len):
    q = torch.randn(1, 2, seq_len, 32)
    out = sdpa_reference(q, q, q, causal=True)
    assert not torch.isnan(out).any()  # ok
    assert out.shape == q.shape


def test_runs_on_accelerator():
    device = "cuda"  # ok
    q = torch.randn(1, 2, 16, 32).to("cuda")  # expect: TPU401
    out = sdpa_reference(q, q, q)
    assert out.device.type == device


def test_memory_is_released():
    before = torch.cuda.memory_allocated()  # ok
    x = torch.randn(1024, 1024)
    del x
    torch.cuda.empty_cache()  # ok
    assert torch.cuda.memory_allocated() <= before  # ok

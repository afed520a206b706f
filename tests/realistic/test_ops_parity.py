"""Parity tests of custom ops against PyTorch references (pytest), including a TPU job."""
import pytest
import torch

from mylib import ops

try:
    import torch_xla

    HAS_XLA = True
except ImportError:
    HAS_XLA = False


def test_nonzero_matches_reference():
    x = torch.tensor([0, 3, 0, 5])
    assert torch.equal(ops.nonzero(x), torch.nonzero(x))  # ok


def test_unique_counts():
    x = torch.tensor([1, 1, 2, 3, 3, 3])
    values, counts = torch.unique(x, return_counts=True)  # ok
    assert counts.tolist() == [2, 1, 3]


def test_masked_scatter_bool_index():
    x = torch.randn(10)
    mask = x > 0
    out = ops.masked_scatter(x, mask, 0.0)
    assert torch.equal(out[mask], torch.zeros(int(mask.sum())))  # ok


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only")
def test_fused_kernel_on_cuda():
    x = torch.randn(64, 64, device="cuda")  # ok
    torch.testing.assert_close(ops.fused_gelu(x), torch.nn.functional.gelu(x))
    assert torch.cuda.max_memory_allocated() > 0  # ok


@pytest.mark.skipif(not HAS_XLA, reason="needs torch_xla")
def test_fused_kernel_on_xla():
    device = torch_xla.device()
    x = torch.randn(64, 64, device=device)
    y = ops.fused_gelu(x)
    torch_xla.sync()
    assert y.device.type == "xla"
    assert (y.cpu() - torch.nn.functional.gelu(x.cpu())).abs().max().item() < 1e-5  # ok


@pytest.mark.skipif(not HAS_XLA, reason="needs torch_xla")
def test_bicubic_on_xla():
    device = torch_xla.device()
    x = torch.rand(1, 3, 16, 16, device=device)
    y = torch.nn.functional.interpolate(x, scale_factor=2, mode="bicubic")  # ok
    assert y.shape[-1] == 32
    scaler = torch_xla.amp.GradScaler()  # expect: TPU611

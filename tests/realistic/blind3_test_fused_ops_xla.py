"""pytest checks of the project's fused ops (RMSNorm, rotary, top-k routing) on an XLA device against CPU references."""
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

from fused_ops import rms_norm, apply_rotary, topk_route  # project-local

DEVICE = torch_xla.device()


def rms_norm_ref(x, w, eps=1e-6):
    x64 = x.double()  # ok
    return (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()).to(x.dtype)  # ok


@pytest.fixture(autouse=True)
def clear_metrics():
    met.clear_all()
    yield


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_matches_reference(dtype):
    x = torch.randn(4, 256, 1024, dtype=dtype)
    w = torch.rand(1024, dtype=dtype)
    out = rms_norm(x.to(DEVICE), w.to(DEVICE))
    torch.testing.assert_close(out.cpu(), rms_norm_ref(x, w), rtol=2e-2, atol=2e-2)  # ok


def test_rms_norm_on_a_ramp():
    x = torch.tensor(np.linspace(-3.0, 3.0, 1024).reshape(8, 128), device=DEVICE)  # expect: TPU502
    w = torch.ones(128, device=DEVICE)  # ok
    torch.testing.assert_close(rms_norm(x, w).cpu(), rms_norm_ref(x.cpu(), w.cpu()))  # ok


def test_rotary_matches_complex_reference():
    q = torch.randn(2, 16, 64, 128)
    freqs = torch.outer(torch.arange(64).float(), 1.0 / 10000 ** (torch.arange(0, 128, 2).float() / 128))
    ref = torch.view_as_real(torch.view_as_complex(q.reshape(2, 16, 64, 64, 2)) * torch.polar(torch.ones_like(freqs), freqs)).flatten(-2)  # ok
    out = apply_rotary(q.to(DEVICE), freqs.cos().to(DEVICE), freqs.sin().to(DEVICE))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)  # ok


def test_rotary_positions_on_device():
    q = torch.randn(1, 8, 32, 64, device=DEVICE)  # ok
    positions = torch.arange(32, device=DEVICE)  # ok
    inv_freq = 1.0 / 10000 ** (torch.arange(0, 64, 2).float() / 64)
    freqs = positions[:, None].float() * inv_freq[None, :]  # expect: TPU405
    assert apply_rotary(q, freqs.cos(), freqs.sin()).shape == q.shape


def test_topk_route_does_not_fall_back():
    logits = torch.randn(512, 64, device=DEVICE)  # ok
    weights, experts = topk_route(logits, k=2)
    xm.mark_step()  # expect: TPU601
    assert experts.shape == (512, 2)
    assert torch.unique(experts.cpu()).numel() <= 64  # ok
    assert not [name for name in met.counter_names() if name.startswith("aten::")]  # ok


def test_topk_route_load_balance():
    logits = torch.randn(4096, 8, device=DEVICE)  # ok
    _, experts = topk_route(logits, k=1)
    counts = torch.bincount(experts.flatten(), minlength=8)  # ok
    assert counts.min().item() > 300  # ok


def test_route_recompiles_once():
    for n in (128, 256, 128, 256):
        topk_route(torch.randn(n, 8, device=DEVICE), k=2)  # ok
        torch_xla.sync()
    assert met.metric_data("CompileTime")[0] <= 2  # ok


def test_rms_norm_speed():
    x = torch.randn(8, 2048, 4096, device=DEVICE, dtype=torch.bfloat16)  # ok
    w = torch.ones(4096, device=DEVICE, dtype=torch.bfloat16)  # ok
    rms_norm(x, w)
    torch_xla.sync(wait=True)
    start = time.perf_counter()
    for _ in range(20):
        rms_norm(x, w)
        torch_xla.sync()
    elapsed = time.perf_counter() - start  # expect: TPU111
    assert elapsed / 20 < 0.005


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU for the cross-check")
def test_matches_cuda_kernel():
    x = torch.randn(4, 1024, device="cuda")  # ok
    torch.cuda.synchronize()  # ok
    torch.testing.assert_close(rms_norm(x, torch.ones(1024, device="cuda")).cpu(), F.rms_norm(x, (1024,)).cpu())  # ok

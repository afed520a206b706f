"""Numerics tests for the model's custom layers on the XLA device (run with pytest on a TPU VM)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torch_xla
from mymodel.layers import RMSNorm, SwiGLU

DEVICE = torch_xla.device()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def rms_reference(x, eps=1e-6):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)


def test_rmsnorm_matches_numpy(rng):
    x_np = rng.standard_normal((4, 16, 256))
    x = torch.from_numpy(x_np).to(DEVICE)  # expect: TPU502
    norm = RMSNorm(256, eps=1e-6).to(DEVICE)
    np.testing.assert_allclose(norm(x).cpu().numpy(), rms_reference(x_np), rtol=1e-4)  # ok


def test_rmsnorm_float32_input(rng):
    x_np = rng.standard_normal((4, 16, 256)).astype(np.float32)
    x = torch.from_numpy(x_np).to(DEVICE)  # ok
    norm = RMSNorm(256, eps=1e-6).to(DEVICE)
    np.testing.assert_allclose(norm(x).cpu().numpy(), rms_reference(x_np), rtol=1e-4, atol=1e-5)  # ok


def test_swiglu_gradients_are_finite():
    layer = SwiGLU(256, 1024).to(DEVICE)
    x = torch.randn(8, 256, device=DEVICE, requires_grad=True)  # ok
    layer(x).sum().backward()
    assert torch.isfinite(x.grad).all()  # ok


def test_rotary_angles():
    pos = torch.arange(128, device=DEVICE)  # ok
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 64, 2).float() / 64))  # expect: TPU405
    angles = pos[:, None].float() * inv_freq[None, :]
    assert angles.shape == (128, 32)  # ok


def test_causal_mask_fill():
    scores = torch.randn(2, 4, 16, 16, device=DEVICE)  # ok
    mask = torch.ones(16, 16, dtype=torch.bool, device=DEVICE).tril()  # ok
    out = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(out.sum(-1).cpu(), torch.ones(2, 4, 16))  # ok


def test_matmul_against_float64_reference():
    x = torch.randn(64, 64)
    ref = (x.double() @ x.double().T).float()  # ok
    out = (x.to(DEVICE) @ x.to(DEVICE).T).cpu()  # ok
    torch.testing.assert_close(out, ref, atol=1e-2, rtol=1e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_matches_fused_cuda_kernel():
    x = torch.randn(4, 256, device="cuda")  # ok
    torch.testing.assert_close(RMSNorm(256).cuda()(x), RMSNorm(256).cuda()(x))  # ok


def test_state_dict_loads_on_device(tmp_path):
    layer = SwiGLU(256, 1024)
    torch.save(layer.state_dict(), tmp_path / "w.pt")  # ok
    loaded = SwiGLU(256, 1024)
    loaded.load_state_dict(torch.load(tmp_path / "w.pt", map_location="cpu"))  # ok
    loaded = loaded.to(DEVICE)
    x = torch.randn(2, 256).to(DEVICE)  # ok
    assert loaded(x).shape == (2, 256)  # ok

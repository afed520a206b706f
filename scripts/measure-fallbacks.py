#!/usr/bin/env python3
"""Measures which torch ops PyTorch/XLA runs on the CPU, and which have value-dependent shapes.

Every CPU-fallback claim of tpulint (the TPU2xx rules, and the value-dependent ops of TPU3xx)
rests on the record this script writes: `server/analyzer/data/torch_xla-<version>-fallbacks.json`.
Each case is a few lines of ordinary PyTorch code (a setup and one op line); the script runs the
op forward on the XLA device and, where the inputs require grad, backward, and records the
`aten::` ops that `torch_xla.debug.metrics.executed_fallback_ops()` reports after a sync. It runs
the same lines twice on the CPU with different seeds to see whether the output shape depends on
the input values. `tests/fallback_record.rs` analyses the same lines with tpulint and fails when a
rule's claim disagrees with the record.

Run by hand on a machine with torch_xla (no TPU needed; the XLA CPU device lowers the same ops):

    python3 -m venv v && v/bin/pip install torch==2.9.0 torch-xla==2.9.0
    v/bin/pip install --no-deps torchvision==0.24.0 && v/bin/pip install pillow  # torchvision cases
    PJRT_DEVICE=CPU v/bin/python scripts/measure-fallbacks.py

Options: `--out PATH` (default: the record for the installed torch_xla), `--only SUBSTRING`
(run the cases whose id contains it and print them, writing nothing).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = 1


# Ops that the XLA CPU device runs through the fallback but a TPU lowers: torch_xla 2.9's
# `torch_xla/csrc/aten_xla_type.cpp` lowers them only `if CheckTpuDevice(hw_type)` ("Only the XLA
# TPU backend for now implements the CustomCall required by our XLA lowering"). Measured on the CPU
# device they fall back; the record keeps the measurement and says what a TPU does.
TPU_ONLY_LOWERINGS = {
    "aten::upsample_bilinear2d_backward": "aten_xla_type.cpp upsample_bilinear2d_backward (CheckTpuDevice)",
    "aten::upsample_nearest2d_backward": "aten_xla_type.cpp upsample_nearest2d_backward (CheckTpuDevice)",
}

# Not a CPU fallback of the op: reading a value to the host (`.item()` inside the op, e.g. an
# error check on `info`, or inferring a size). Recorded as a host read.
HOST_READ_OPS = {"aten::_local_scalar_dense"}


@dataclass
class Case:
    """One op and argument combination, written as the user would write it."""

    id: str
    op: str  # the qualified name tpulint's rules match (`torch.quantile`, `torch.Tensor.scatter_`)
    rules: list[str]  # the rules that speak of this op or combination
    setup: str  # lines binding the inputs on `device`; `requires_grad=True` asks for backward
    line: str  # the op line; its result, if any, in `out`
    needs: list[str] = field(default_factory=list)  # extra modules (`torchvision`)
    grad: bool = False  # run backward too: an input requires grad, or a module has parameters


def cases() -> list[Case]:
    c: list[Case] = []

    def add(id, op, rules, setup, line, needs=(), grad=None):
        setup = textwrap.dedent(setup).strip()
        if grad is None:
            grad = "requires_grad" in setup
        c.append(Case(id, op, list(rules), setup, line, list(needs), grad))

    x2 = "x = torch.randn(8, 16, device=device, requires_grad=True)"
    x1 = "x = torch.randn(64, device=device, requires_grad=True)"

    # ---- TPU205: quantiles, medians and modes ----
    add("quantile.dim", "torch.quantile", ["TPU205"], x2, "out = torch.quantile(x, 0.5, dim=1)")
    add("quantile.flat", "torch.quantile", ["TPU205"], x1, "out = torch.quantile(x, 0.9)")
    add("quantile.tensor_q", "torch.quantile", ["TPU205"],
        x2 + "\nq = torch.tensor([0.1, 0.5, 0.9], device=device)", "out = torch.quantile(x, q, dim=1)")
    add("quantile.method", "torch.Tensor.quantile", ["TPU205"], x2, "out = x.quantile(0.5, dim=1)")
    add("nanquantile.dim", "torch.nanquantile", ["TPU205"], x2, "out = torch.nanquantile(x, 0.5, dim=1)")
    add("median.dim", "torch.median", ["TPU205"], x2, "out = torch.median(x, dim=1).values")
    add("median.flat", "torch.median", ["TPU205"], x1, "out = torch.median(x)")
    add("median.method", "torch.Tensor.median", ["TPU205"], x2, "out = x.median(dim=1).values")
    add("nanmedian.dim", "torch.nanmedian", ["TPU205"], x2, "out = torch.nanmedian(x, dim=1).values")
    add("nanmedian.flat", "torch.nanmedian", ["TPU205"], x1, "out = torch.nanmedian(x)")
    add("mode.dim", "torch.mode", ["TPU205"],
        "x = torch.randint(0, 4, (8, 16), device=device)", "out = torch.mode(x, dim=1).values")
    add("kthvalue.dim", "torch.kthvalue", [], x2, "out = torch.kthvalue(x, 4, dim=1).values")
    add("sort.dim", "torch.sort", [], x2, "out = torch.sort(x, dim=1).values")
    add("topk.dim", "torch.topk", [], x2, "out = torch.topk(x, 4, dim=1).values")

    # ---- Set membership and friends (no rule before this record) ----
    add("isin.tensor", "torch.isin", [],
        "x = torch.randint(0, 10, (8, 16), device=device)\ny = torch.tensor([1, 3, 5], device=device)",
        "out = torch.isin(x, y)")
    add("isin.scalar", "torch.isin", [],
        "x = torch.randint(0, 10, (8, 16), device=device)", "out = torch.isin(x, 3)")
    add("searchsorted", "torch.searchsorted", [],
        "s = torch.sort(torch.randn(16, device=device)).values\nv = torch.randn(8, device=device)",
        "out = torch.searchsorted(s, v)")
    add("bucketize", "torch.bucketize", [],
        "b = torch.linspace(-1, 1, 5, device=device)\nv = torch.randn(8, device=device)",
        "out = torch.bucketize(v, b)")
    add("cumsum", "torch.cumsum", [], x2, "out = torch.cumsum(x, dim=1)")
    add("cummax", "torch.cummax", [], x2, "out = torch.cummax(x, dim=1).values")
    add("logcumsumexp", "torch.logcumsumexp", [], x2, "out = torch.logcumsumexp(x, dim=1)")

    # ---- TPU201 grid_sample ----
    gs = "x = torch.randn(2, 3, 8, 8, device=device, requires_grad=True)\ngrid = torch.rand(2, 4, 4, 2, device=device) * 2 - 1"
    gs3 = "x = torch.randn(1, 2, 4, 4, 4, device=device, requires_grad=True)\ngrid = torch.rand(1, 2, 2, 2, 3, device=device) * 2 - 1"
    for mode in ("bilinear", "nearest", "bicubic"):
        add(f"grid_sample.2d.{mode}", "torch.nn.functional.grid_sample", ["TPU201"], gs,
            f'out = F.grid_sample(x, grid, mode="{mode}", align_corners=False)')
    add("grid_sample.3d.bilinear", "torch.nn.functional.grid_sample", ["TPU201"], gs3,
        'out = F.grid_sample(x, grid, mode="bilinear", align_corners=False)')

    add("grid_sampler", "torch.grid_sampler", ["TPU201"], gs, "out = torch.grid_sampler(x, grid, 0, 0, False)")
    add("grid_sampler_2d", "torch.grid_sampler_2d", ["TPU201"], gs, "out = torch.grid_sampler_2d(x, grid, 0, 0, False)")
    add("grid_sampler_3d", "torch.grid_sampler_3d", ["TPU201"], gs3, "out = torch.grid_sampler_3d(x, grid, 0, 0, False)")

    # ---- TPU202 interpolate: modes × ranks × antialias ----
    inputs = {
        1: "x = torch.randn(2, 3, 16, device=device, requires_grad=True)",
        2: "x = torch.randn(2, 3, 16, 16, device=device, requires_grad=True)",
        3: "x = torch.randn(1, 2, 8, 8, 8, device=device, requires_grad=True)",
    }
    modes = {
        1: ["nearest", "nearest-exact", "linear", "area"],
        2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
        3: ["nearest", "nearest-exact", "trilinear", "area"],
    }
    for rank, rank_modes in modes.items():
        for mode in rank_modes:
            align = ', align_corners=False' if mode in ("linear", "bilinear", "bicubic", "trilinear") else ""
            add(f"interpolate.{rank}d.{mode}", "torch.nn.functional.interpolate", ["TPU202"], inputs[rank],
                f'out = F.interpolate(x, scale_factor=2, mode="{mode}"{align})')
    for mode in ("bilinear", "bicubic"):
        add(f"interpolate.2d.{mode}.antialias", "torch.nn.functional.interpolate", ["TPU202"], inputs[2],
            f'out = F.interpolate(x, size=(8, 8), mode="{mode}", align_corners=False, antialias=True)')
    add("interpolate.1d.nearest.size", "torch.nn.functional.interpolate", ["TPU202"], inputs[1],
        "out = F.interpolate(x, size=[32])")
    add("upsample.2d.bicubic", "torch.nn.functional.upsample", ["TPU202"], inputs[2],
        'out = F.upsample(x, scale_factor=2, mode="bicubic", align_corners=False)')
    add("interpolate.2d.area.downsample", "torch.nn.functional.interpolate", ["TPU202"], inputs[2],
        'out = F.interpolate(x, size=(8, 8), mode="area")')
    add("upsample_module.2d.nearest", "torch.nn.Upsample", ["TPU202"], inputs[2],
        'out = torch.nn.Upsample(scale_factor=2, mode="nearest")(x)')
    add("upsample_module.2d.bicubic", "torch.nn.Upsample", ["TPU202"], inputs[2],
        'out = torch.nn.Upsample(scale_factor=2, mode="bicubic")(x)')

    # ---- TPU203 CTC loss ----
    ctc = textwrap.dedent("""\
        log_probs = torch.randn(20, 2, 5, device=device).log_softmax(2).detach().requires_grad_()
        targets = torch.randint(1, 5, (2, 6), device=device)
        input_lengths = torch.full((2,), 20, dtype=torch.long, device=device)
        target_lengths = torch.full((2,), 6, dtype=torch.long, device=device)""")
    add("ctc_loss.functional", "torch.nn.functional.ctc_loss", ["TPU203"], ctc,
        "out = F.ctc_loss(log_probs, targets, input_lengths, target_lengths)")
    add("ctc_loss.torch", "torch.ctc_loss", ["TPU203"], ctc,
        "out = torch.ctc_loss(log_probs, targets, input_lengths, target_lengths)")
    add("ctc_loss.module", "torch.nn.CTCLoss", ["TPU203"], ctc,
        "out = torch.nn.CTCLoss()(log_probs, targets, input_lengths, target_lengths)")

    # ---- TPU204 FFT and complex ----
    for fn in ("fft", "ifft", "rfft", "irfft", "fft2", "rfft2", "fftn", "rfftn", "hfft"):
        add(f"fft.{fn}", f"torch.fft.{fn}", ["TPU204"],
            "x = torch.randn(4, 16, device=device)", f"out = torch.fft.{fn}(x)")
    add("fft.fftshift", "torch.fft.fftshift", [], "x = torch.randn(4, 16, device=device)",
        "out = torch.fft.fftshift(x)")
    add("stft", "torch.stft", ["TPU204"],
        "x = torch.randn(2, 400, device=device)\nwindow = torch.hann_window(64, device=device)",
        "out = torch.stft(x, 64, hop_length=16, window=window, return_complex=True)")
    add("stft.functional", "torch.functional.stft", ["TPU204"],
        "x = torch.randn(2, 400, device=device)\nwindow = torch.hann_window(64, device=device)",
        "out = torch.functional.stft(x, 64, hop_length=16, window=window, return_complex=True)")
    add("istft", "torch.istft", ["TPU204"],
        "spec = torch.randn(2, 33, 26, 2, device=device)\nwindow = torch.hann_window(64, device=device)",
        "out = torch.istft(torch.view_as_complex(spec), 64, hop_length=16, window=window)")
    add("polar", "torch.polar", ["TPU204"],
        "a = torch.rand(8, device=device)\nb = torch.rand(8, device=device)", "out = torch.polar(a, b)")
    add("complex", "torch.complex", ["TPU204"],
        "a = torch.rand(8, device=device)\nb = torch.rand(8, device=device)", "out = torch.complex(a, b)")
    add("view_as_complex", "torch.view_as_complex", ["TPU204"],
        "a = torch.rand(8, 2, device=device)", "out = torch.view_as_complex(a)")

    # ---- TPU206 linalg ----
    sq = "a = torch.randn(4, 4, device=device)\na = a @ a.T + 4 * torch.eye(4, device=device)"
    for fn in ("eig", "eigvals"):
        add(f"linalg.{fn}", f"torch.linalg.{fn}", ["TPU206"], sq, f"out = torch.linalg.{fn}(a)")
    for fn in ("eigh", "eigvalsh", "svd", "svdvals", "qr", "cholesky", "inv", "inv_ex", "det", "slogdet",
               "matrix_norm", "pinv", "lu", "lu_factor", "lu_factor_ex", "householder_product"):
        line = {
            "householder_product": "out = torch.linalg.householder_product(a, torch.rand(4, device=device))",
        }.get(fn, f"out = torch.linalg.{fn}(a)")
        add(f"linalg.{fn}", f"torch.linalg.{fn}", ["TPU206"], sq, line)
    add("linalg.inv_ex.check_errors", "torch.linalg.inv_ex", ["TPU206"], sq,
        "out = torch.linalg.inv_ex(a, check_errors=True).inverse")
    add("torch.cholesky", "torch.cholesky", ["TPU206"], sq, "out = torch.cholesky(a)")
    add("torch.inverse", "torch.inverse", ["TPU206"], sq, "out = torch.inverse(a)")
    add("torch.det", "torch.det", ["TPU206"], sq, "out = torch.det(a)")
    add("torch.linalg.cholesky_ex", "torch.linalg.cholesky_ex", ["TPU206"], sq, "out = torch.linalg.cholesky_ex(a).L")
    add("linalg.solve", "torch.linalg.solve", ["TPU206"], sq + "\nb = torch.randn(4, 2, device=device)",
        "out = torch.linalg.solve(a, b)")
    add("linalg.lstsq", "torch.linalg.lstsq", ["TPU206"], sq + "\nb = torch.randn(4, 2, device=device)",
        "out = torch.linalg.lstsq(a, b).solution")
    add("linalg.lu_solve", "torch.linalg.lu_solve", ["TPU206"], sq + "\nb = torch.randn(4, 2, device=device)",
        "LU, pivots = torch.linalg.lu_factor(a)\nout = torch.linalg.lu_solve(LU, pivots, b)")
    add("torch.lu", "torch.lu", ["TPU206"], sq, "out = torch.lu(a)")
    add("torch.lu_solve", "torch.lu_solve", ["TPU206"], sq + "\nb = torch.randn(4, 2, device=device)",
        "LU, pivots = torch.linalg.lu_factor(a)\nout = torch.lu_solve(b, LU, pivots)")
    add("torch.orgqr", "torch.orgqr", ["TPU206"], sq, "out = torch.orgqr(a, torch.rand(4, device=device))")
    add("torch.ormqr", "torch.ormqr", ["TPU206"], sq,
        "out = torch.ormqr(a, torch.rand(4, device=device), torch.randn(4, 4, device=device))")

    # ---- TPU207 random ops with a generator; TPU216 randperm options ----
    gen = "g = torch.Generator().manual_seed(0)"
    add("randn.generator", "torch.randn", ["TPU207"], gen, "out = torch.randn(8, generator=g, device=device)")
    add("rand.generator", "torch.rand", ["TPU207"], gen, "out = torch.rand(8, generator=g, device=device)")
    add("randn.no_generator", "torch.randn", [], "", "out = torch.randn(8, device=device)")
    add("bernoulli.generator", "torch.bernoulli", ["TPU207"], gen + "\np = torch.rand(8, device=device)",
        "out = torch.bernoulli(p, generator=g)")
    for method, arguments in (("bernoulli_", "0.5, "), ("cauchy_", ""), ("exponential_", ""), ("geometric_", "0.5, "),
                              ("log_normal_", ""), ("random_", "0, 10, "), ("uniform_", "")):
        add(f"{method}.generator", f"torch.Tensor.{method}", ["TPU207"], gen + "\nx = torch.empty(8, device=device)",
            f"out = x.{method}({arguments}generator=g)")
    add("normal.generator", "torch.normal", ["TPU207"], gen + "\nmean = torch.zeros(8, device=device)",
        "out = torch.normal(mean, 1.0, generator=g)")
    add("poisson.generator", "torch.poisson", ["TPU207"], gen + "\nrates = torch.rand(8, device=device) * 4",
        "out = torch.poisson(rates, generator=g)")
    add("poisson.no_generator", "torch.poisson", [], "rates = torch.rand(8, device=device) * 4",
        "out = torch.poisson(rates)")
    add("multinomial.generator", "torch.multinomial", ["TPU207"], gen + "\np = torch.rand(4, 10, device=device)",
        "out = torch.multinomial(p, 3, replacement=True, generator=g)")
    add("randint.generator", "torch.randint", ["TPU207"], gen, "out = torch.randint(0, 10, (8,), generator=g, device=device)")
    add("randperm.generator", "torch.randperm", ["TPU207"], gen, "out = torch.randperm(16, generator=g, device=device)")
    add("bernoulli.no_generator", "torch.bernoulli", [], "p = torch.rand(8, device=device)",
        "out = torch.bernoulli(p)")
    add("normal_.generator", "torch.Tensor.normal_", ["TPU207"], gen + "\nx = torch.empty(8, device=device)",
        "out = x.normal_(generator=g)")
    add("uniform_.no_generator", "torch.Tensor.uniform_", [], "x = torch.empty(8, device=device)",
        "out = x.uniform_()")
    add("exponential_.no_generator", "torch.Tensor.exponential_", [], "x = torch.empty(8, device=device)",
        "out = x.exponential_()")
    add("multinomial.replacement_false", "torch.multinomial", ["TPU208"], "p = torch.rand(4, 10, device=device)",
        "out = torch.multinomial(p, 3)")
    add("multinomial.replacement_true", "torch.multinomial", ["TPU208"], "p = torch.rand(4, 10, device=device)",
        "out = torch.multinomial(p, 3, replacement=True)")
    add("multinomial.one_sample", "torch.multinomial", ["TPU208"], "p = torch.rand(4, 10, device=device)",
        "out = torch.multinomial(p, 1)")
    add("randperm.default", "torch.randperm", ["TPU216"], "", "out = torch.randperm(16, device=device)")
    add("randperm.int32", "torch.randperm", ["TPU216"], "",
        "out = torch.randperm(16, dtype=torch.int32, device=device)")
    add("randperm.zero", "torch.randperm", ["TPU216"], "", "out = torch.randperm(0, device=device)")
    add("randint.default", "torch.randint", [], "", "out = torch.randint(0, 10, (8,), device=device)")

    # ---- TPU209 EmbeddingBag ----
    bag = "w = torch.randn(10, 4, device=device, requires_grad=True)\nidx = torch.randint(0, 10, (2, 3), device=device)"
    for mode in ("sum", "mean", "max"):
        add(f"embedding_bag.functional.{mode}", "torch.nn.functional.embedding_bag", ["TPU209"], bag,
            f'out = F.embedding_bag(idx, w, mode="{mode}")')
        add(f"embedding_bag.functional.{mode}.no_grad", "torch.nn.functional.embedding_bag", ["TPU209"],
            bag.replace(", requires_grad=True", ""),
            f'with torch.no_grad():\n    out = F.embedding_bag(idx, w, mode="{mode}")', grad=False)
    add("embedding_bag.module.sum", "torch.nn.EmbeddingBag", ["TPU209"],
        "idx = torch.randint(0, 10, (2, 3), device=device)",
        'bag = torch.nn.EmbeddingBag(10, 4, mode="sum").to(device)\nout = bag(idx)', grad=True)
    add("embedding_bag.from_pretrained.mean", "torch.nn.EmbeddingBag.from_pretrained", ["TPU209"],
        "idx = torch.randint(0, 10, (2, 3), device=device)",
        'bag = torch.nn.EmbeddingBag.from_pretrained(torch.randn(10, 4), freeze=False).to(device)\nout = bag(idx)',
        grad=True)
    add("embedding.plain", "torch.nn.functional.embedding", [], bag, "out = F.embedding(idx, w)")

    # ---- TPU210 weight norm: the old hook and the parametrization ----
    wn_in = "x = torch.randn(2, 4, 16, device=device)"
    add("weight_norm.legacy", "torch.nn.utils.weight_norm", ["TPU210"], wn_in,
        "conv = torch.nn.utils.weight_norm(torch.nn.Conv1d(4, 8, 3)).to(device)\nout = conv(x)", grad=True)
    add("weight_norm.parametrizations", "torch.nn.utils.parametrizations.weight_norm", ["TPU210"], wn_in,
        "conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 8, 3)).to(device)\nout = conv(x)",
        grad=True)
    add("weight_norm.explicit", "torch.Tensor.norm", [],
        "v = torch.randn(8, 4, 3, device=device, requires_grad=True)\ng = torch.ones(8, 1, 1, device=device, requires_grad=True)",
        "out = g * v / v.norm(dim=(1, 2), keepdim=True)")

    # ---- TPU211 scatter reductions ----
    sc = ("x = torch.zeros(4, 8, device=device)\nidx = torch.randint(0, 8, (4, 8), device=device)\n"
          "src = torch.randn(4, 8, device=device)")
    add("scatter.src", "torch.Tensor.scatter", ["TPU211"], sc, "out = x.scatter(1, idx, src)")
    add("scatter.reduce_add", "torch.Tensor.scatter", ["TPU211"], sc, 'out = x.scatter(1, idx, src, reduce="add")')
    add("scatter.reduce_multiply", "torch.Tensor.scatter", ["TPU211"], sc,
        'out = x.scatter(1, idx, src, reduce="multiply")')
    add("scatter_add", "torch.Tensor.scatter_add", [], sc, "out = x.scatter_add(1, idx, src)")
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        add(f"scatter_reduce.{reduce}", "torch.Tensor.scatter_reduce", ["TPU211"], sc,
            f'out = x.scatter_reduce(1, idx, src, reduce="{reduce}")')
        add(f"scatter_reduce.{reduce}.exclude_self", "torch.Tensor.scatter_reduce", ["TPU211"], sc,
            f'out = x.scatter_reduce(1, idx, src, reduce="{reduce}", include_self=False)')
    ir = ("x = torch.ones(4, 8, device=device)\nidx = torch.tensor([0, 2, 3], device=device)\n"
          "src = torch.randn(3, 8, device=device)")
    for reduce in ("prod", "mean", "amax"):
        add(f"index_reduce.{reduce}", "torch.Tensor.index_reduce", ["TPU211"], ir,
            f'out = x.index_reduce(0, idx, src, "{reduce}")')
    add("index_add", "torch.Tensor.index_add", [], ir, "out = x.index_add(0, idx, src)")

    # ---- TPU212 pooling ----
    p2 = "x = torch.randn(1, 2, 16, 16, device=device, requires_grad=True)"
    p3 = "x = torch.randn(1, 2, 8, 8, 8, device=device, requires_grad=True)"
    add("max_pool2d.plain", "torch.nn.functional.max_pool2d", ["TPU212"], p2, "out = F.max_pool2d(x, 2)")
    add("max_pool2d.dilated", "torch.nn.functional.max_pool2d", ["TPU212"], p2,
        "out = F.max_pool2d(x, 3, stride=1, dilation=2)")
    add("max_pool2d.dilated_module", "torch.nn.MaxPool2d", ["TPU212"], p2,
        "out = torch.nn.MaxPool2d(3, stride=1, dilation=2)(x)")
    add("max_pool2d.indices", "torch.nn.functional.max_pool2d", ["TPU212"], p2,
        "out = F.max_pool2d(x, 2, return_indices=True)[0]")
    add("max_pool3d.plain", "torch.nn.functional.max_pool3d", ["TPU212"], p3, "out = F.max_pool3d(x, 2)")
    add("max_pool3d.dilated", "torch.nn.functional.max_pool3d", ["TPU212"], p3,
        "out = F.max_pool3d(x, 3, stride=1, dilation=2)")
    add("max_pool2d.torch.dilated", "torch.max_pool2d", ["TPU212"], p2,
        "out = torch.max_pool2d(x, 3, stride=1, dilation=2)")
    add("max_pool3d.torch.dilated", "torch.max_pool3d", ["TPU212"], p3,
        "out = torch.max_pool3d(x, 3, stride=1, dilation=2)")
    add("max_pool2d_with_indices.dilated", "torch.nn.functional.max_pool2d_with_indices", ["TPU212"], p2,
        "out = F.max_pool2d_with_indices(x, 3, stride=1, dilation=2)[0]")
    add("max_pool3d_with_indices.dilated", "torch.nn.functional.max_pool3d_with_indices", ["TPU212"], p3,
        "out = F.max_pool3d_with_indices(x, 3, stride=1, dilation=2)[0]")
    add("max_pool3d.dilated_module", "torch.nn.MaxPool3d", ["TPU212"], p3,
        "out = torch.nn.MaxPool3d(3, stride=1, dilation=2)(x)")
    add("max_pool2d.dilated.no_grad", "torch.nn.functional.max_pool2d", ["TPU212"],
        p2.replace(", requires_grad=True", ""), "out = F.max_pool2d(x, 3, stride=1, dilation=2)")
    add("max_pool1d.dilated", "torch.nn.functional.max_pool1d", ["TPU212"],
        "x = torch.randn(1, 2, 16, device=device, requires_grad=True)", "out = F.max_pool1d(x, 3, dilation=2)")
    add("max_pool1d.torch.dilated", "torch.max_pool1d", ["TPU212"],
        "x = torch.randn(1, 2, 16, device=device, requires_grad=True)", "out = torch.max_pool1d(x, 3, dilation=2)")
    add("max_pool1d.dilated_module", "torch.nn.MaxPool1d", ["TPU212"],
        "x = torch.randn(1, 2, 16, device=device, requires_grad=True)",
        "out = torch.nn.MaxPool1d(3, dilation=2)(x)")
    add("avg_pool2d", "torch.nn.functional.avg_pool2d", [], p2, "out = F.avg_pool2d(x, 2)")
    add("adaptive_avg_pool2d.divisible", "torch.nn.functional.adaptive_avg_pool2d", [], p2,
        "out = F.adaptive_avg_pool2d(x, 4)")
    add("adaptive_avg_pool2d.indivisible", "torch.nn.functional.adaptive_avg_pool2d", [], p2,
        "out = F.adaptive_avg_pool2d(x, 5)")
    add("adaptive_max_pool2d", "torch.nn.functional.adaptive_max_pool2d", [], p2,
        "out = F.adaptive_max_pool2d(x, 4)")
    add("max_unpool2d", "torch.nn.functional.max_unpool2d", [], p2,
        "pooled, indices = F.max_pool2d(x, 2, return_indices=True)\nout = F.max_unpool2d(pooled, indices, 2)")

    # ---- TPU213 addmm with alpha / beta ----
    mm = ("bias = torch.randn(4, 4, device=device, requires_grad=True)\n"
          "a = torch.randn(4, 8, device=device, requires_grad=True)\nb = torch.randn(8, 4, device=device)")
    add("addmm.plain", "torch.addmm", ["TPU213"], mm, "out = torch.addmm(bias, a, b)")
    add("addmm.alpha", "torch.addmm", ["TPU213"], mm, "out = torch.addmm(bias, a, b, alpha=0.5)")
    add("addmm.beta", "torch.addmm", ["TPU213"], mm, "out = torch.addmm(bias, a, b, beta=0.5)")
    add("addmm.method.alpha_beta", "torch.Tensor.addmm", ["TPU213"], mm, "out = bias.addmm(a, b, beta=2, alpha=0.5)")
    add("baddbmm.alpha", "torch.baddbmm", [],
        "bias = torch.randn(2, 4, 4, device=device, requires_grad=True)\n"
        "a = torch.randn(2, 4, 8, device=device)\nb = torch.randn(2, 8, 4, device=device)",
        "out = torch.baddbmm(bias, a, b, beta=0.0, alpha=0.125)")

    # ---- TPU214 norms with p=0 ----
    add("norm.p0", "torch.norm", ["TPU214"], x2, "out = torch.norm(x, p=0)")
    add("norm.p0_method", "torch.Tensor.norm", ["TPU214"], x2, "out = x.norm(0)")
    add("norm.p2", "torch.norm", [], x2, "out = torch.norm(x, p=2)")
    add("norm.fro_dim", "torch.norm", [], x2, "out = torch.norm(x, dim=1)")
    add("linalg.vector_norm.ord0", "torch.linalg.vector_norm", ["TPU214"], x2,
        "out = torch.linalg.vector_norm(x, ord=0)")
    add("count_nonzero", "torch.count_nonzero", [], x2, "out = torch.count_nonzero(x)")

    # ---- TPU215 torchvision detection ops ----
    boxes = ("boxes = torch.rand(16, 4, device=device) * 10\nboxes[:, 2:] += boxes[:, :2]\n"
             "scores = torch.rand(16, device=device)")
    add("torchvision.nms", "torchvision.ops.nms", ["TPU215"], boxes, "out = torchvision.ops.nms(boxes, scores, 0.5)",
        needs=["torchvision"])
    add("torchvision.batched_nms", "torchvision.ops.batched_nms", ["TPU215"],
        boxes + "\nclasses = torch.randint(0, 3, (16,), device=device)",
        "out = torchvision.ops.batched_nms(boxes, scores, classes, 0.5)", needs=["torchvision"])
    roi = ("x = torch.randn(1, 4, 16, 16, device=device, requires_grad=True)\n"
           "rois = torch.tensor([[0, 1.0, 1.0, 8.0, 8.0], [0, 2.0, 2.0, 12.0, 12.0]], device=device)")
    add("torchvision.roi_align", "torchvision.ops.roi_align", ["TPU215"], roi,
        "out = torchvision.ops.roi_align(x, rois, output_size=(4, 4))", needs=["torchvision"])
    add("torchvision.roi_pool", "torchvision.ops.roi_pool", ["TPU215"], roi,
        "out = torchvision.ops.roi_pool(x, rois, output_size=(4, 4))", needs=["torchvision"])
    add("torchvision.box_iou", "torchvision.ops.box_iou", [], boxes, "out = torchvision.ops.box_iou(boxes, boxes)",
        needs=["torchvision"])

    # ---- Activations whose backward is the question ----
    add("glu", "torch.nn.functional.glu", [], x2, "out = F.glu(x, dim=1)")
    add("glu.no_grad", "torch.nn.functional.glu", [], x2.replace(", requires_grad=True", ""),
        "with torch.no_grad():\n    out = F.glu(x, dim=1)")
    add("logcumsumexp.method", "torch.Tensor.logcumsumexp", [], x2, "out = x.logcumsumexp(dim=1)")
    # pytorch/xla#5695: `nn.PReLU` in training reported `aten::_prelu_kernel_backward` (2023).
    w = "\nw = torch.full((1,), 0.25, device=device, requires_grad=True)"
    add("prelu", "torch.nn.functional.prelu", [], x2 + w, "out = F.prelu(x, w)")
    add("prelu.no_grad", "torch.nn.functional.prelu", [], x2.replace(", requires_grad=True", "") + w,
        "with torch.no_grad():\n    out = F.prelu(x, w)")
    add("prelu.channels", "torch.nn.functional.prelu", [],
        "x = torch.randn(4, 3, 8, 8, device=device, requires_grad=True)\n"
        "w = torch.full((3,), 0.25, device=device, requires_grad=True)", "out = F.prelu(x, w)")
    add("PReLU.module", "torch.nn.PReLU", [], x2 + "\nm = torch.nn.PReLU().to(device)", "out = m(x)",
        grad=True)
    add("PReLU.module.channels", "torch.nn.PReLU", [],
        "x = torch.randn(4, 3, 8, 8, device=device, requires_grad=True)\n"
        "m = torch.nn.PReLU(num_parameters=3).to(device)", "out = m(x)", grad=True)
    add("gelu", "torch.nn.functional.gelu", [], x2, "out = F.gelu(x)")
    add("silu", "torch.nn.functional.silu", [], x2, "out = F.silu(x)")

    # ---- TPU3xx: value-dependent shapes ----
    m = "x = torch.randn(8, 16, device=device)\nmask = x > 0"
    add("nonzero", "torch.nonzero", ["TPU301"], m, "out = torch.nonzero(mask)")
    add("nonzero.method", "torch.Tensor.nonzero", ["TPU301"], m, "out = mask.nonzero()")
    add("argwhere", "torch.argwhere", ["TPU301"], m, "out = torch.argwhere(mask)")
    add("where.one_argument", "torch.where", ["TPU301"], m, "out = torch.where(mask)[0]")
    add("where.three_arguments", "torch.where", [], m, "out = torch.where(mask, x, 0.0)")
    add("masked_select", "torch.masked_select", ["TPU303"], m, "out = torch.masked_select(x, mask)")
    add("mask.read", "torch.Tensor.__getitem__", ["TPU302"], m, "out = x[mask]")
    add("mask.write_scalar", "torch.Tensor.__setitem__", ["TPU302"], m, "x[mask] = 0.0")
    add("masked_fill", "torch.Tensor.masked_fill", [], m, "out = x.masked_fill(mask, 0.0)")
    add("unique", "torch.unique", ["TPU304"], "x = torch.randint(0, 40, (12,), device=device)",
        "out = torch.unique(x)")
    add("unique.counts", "torch.unique", ["TPU304"], "x = torch.randint(0, 40, (12,), device=device)",
        "out = torch.unique(x, return_counts=True)[1]")
    add("unique_consecutive", "torch.unique_consecutive", ["TPU304"],
        "x = torch.randint(0, 3, (32,), device=device)", "out = torch.unique_consecutive(x)")
    add("bincount", "torch.bincount", ["TPU304"], "x = torch.randint(0, 40, (4,), device=device)",
        "out = torch.bincount(x)")
    add("bincount.minlength", "torch.bincount", ["TPU304"], "x = torch.randint(0, 6, (32,), device=device)",
        "out = torch.bincount(x, minlength=6)")
    add("histc", "torch.histc", ["TPU304"], "x = torch.randn(32, device=device)", "out = torch.histc(x, bins=4)")
    add("one_hot.num_classes", "torch.nn.functional.one_hot", [], "x = torch.randint(0, 6, (32,), device=device)",
        "out = F.one_hot(x, num_classes=6)")
    add("one_hot.inferred", "torch.nn.functional.one_hot", [], "x = torch.randint(0, 6, (32,), device=device)",
        "out = F.one_hot(x)")
    ri = "x = torch.randn(4, 3, device=device)\nrepeats = torch.randint(1, 4, (4,), device=device)"
    add("repeat_interleave.tensor_repeats", "torch.repeat_interleave", ["TPU305"], ri,
        "out = torch.repeat_interleave(x, repeats, dim=0)")
    add("repeat_interleave.output_size", "torch.repeat_interleave", ["TPU305"],
        "x = torch.randn(4, 3, device=device)\nrepeats = torch.tensor([1, 2, 3, 2], device=device)",
        "out = torch.repeat_interleave(x, repeats, dim=0, output_size=8)")
    add("repeat_interleave.int_repeats", "torch.repeat_interleave", ["TPU305"], ri,
        "out = torch.repeat_interleave(x, 2, dim=0)")
    return c


def fallback_ops(met) -> list[str]:
    return sorted(set(met.executed_fallback_ops()))


def first_tensor(value, torch):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = first_tensor(item, torch)
            if found is not None:
                return found
    for name in ("values", "solution", "eigenvalues", "S", "L"):
        item = getattr(value, name, None)
        if isinstance(item, torch.Tensor):
            return item
    return None


def namespace(device):
    import torch
    import torch.nn.functional as F

    names = {"torch": torch, "F": F, "device": device}
    try:
        import torchvision  # noqa: F401

        names["torchvision"] = torchvision
    except ImportError:
        pass
    return names


def run_on_xla(case: Case, device, torch, torch_xla, met) -> dict:
    names = namespace(device)
    result = {"forward": [], "backward": None, "error": None}
    phase = "setup"
    try:
        exec(case.setup, names)
        torch_xla.sync()
        met.clear_all()
        phase = "forward"
        exec(case.line, names)
        torch_xla.sync()
        result["forward"] = fallback_ops(met)
        if case.grad:
            out = first_tensor(names.get("out"), torch)
            if out is not None and out.requires_grad:
                phase = "backward"
                met.clear_all()
                out.float().sum().backward()
                torch_xla.sync()
                result["backward"] = fallback_ops(met)
    except Exception as error:  # a failing op is a fact to record, not a crash of the run
        if phase == "forward":
            result["forward"] = fallback_ops(met)
        elif phase == "backward":
            result["backward"] = fallback_ops(met)
        message = str(error).splitlines()[0][:200] if str(error) else ""
        result["error"] = f"{phase}: {type(error).__name__}: {message}"
    return result


def value_dependent_shape(case: Case, torch) -> bool | None:
    """Whether the op line's output shape changes with the input values (same input shapes)."""
    shapes = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        names = namespace(torch.device("cpu"))
        try:
            exec(case.setup, names)
            exec(case.line, names)
        except Exception:
            return None
        out = first_tensor(names.get("out"), torch)
        if out is None:
            return None if "out" in names else False
        shapes.append(tuple(out.shape))
    return len(set(shapes)) > 1


def measure(case: Case, device, torch, torch_xla, met) -> dict:
    measured = run_on_xla(case, device, torch, torch_xla, met)
    dynamic = value_dependent_shape(case, torch)
    return finish(case, measured, dynamic)


def finish(case: Case, measured: dict, dynamic: bool | None) -> dict:
    measured_ops = set(measured["forward"]) | set(measured["backward"] or [])
    cpu_ops = sorted(measured_ops - HOST_READ_OPS)
    return {
        "id": case.id,
        "op": case.op,
        "rules": case.rules,
        "setup": case.setup,
        "line": case.line,
        "forward_fallbacks": measured["forward"],
        "backward_fallbacks": measured["backward"],
        "falls_back": bool(set(cpu_ops) - set(TPU_ONLY_LOWERINGS)),
        "tpu_lowers": sorted(set(cpu_ops) & set(TPU_ONLY_LOWERINGS)),
        "host_read": bool(measured_ops & HOST_READ_OPS),
        "value_dependent_shape": dynamic,
        "error": measured["error"],
    }


def worker(selected: list[Case], first: int) -> int:
    """Measures cases from `first` on, one JSON line each; announces each case before running it,
    so that the parent can name the case that killed the process (XLA aborts on some inputs)."""
    import torch
    import torch_xla
    import torch_xla.debug.metrics as met

    device = torch_xla.device()
    for index in range(first, len(selected)):
        print(json.dumps({"begin": index}), flush=True)
        print(json.dumps({"done": index, "record": measure(selected[index], device, torch, torch_xla, met)}),
              flush=True)
    return 0


def describe(record: dict) -> str:
    if record["error"]:
        verdict = "ERROR " + record["error"]
    else:
        verdict = "FALLBACK" if record["falls_back"] else "lowered"
    if record["host_read"]:
        verdict += " +host-read"
    if record["value_dependent_shape"]:
        verdict += " (value-dependent shape)"
    return f"{verdict} {record['forward_fallbacks']} {record['backward_fallbacks'] or ''}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    os.environ.setdefault("PJRT_DEVICE", "CPU")
    try:
        import torchvision

        torchvision_version = torchvision.__version__
    except ImportError:
        torchvision_version = None
    selected = [case for case in cases() if not args.only or args.only in case.id]
    skipped = [case for case in selected if "torchvision" in case.needs and torchvision_version is None]
    for case in skipped:
        print(f"{case.id}: skipped (torchvision not installed)", file=sys.stderr)
    selected = [case for case in selected if case not in skipped]
    if args.worker is not None:
        return worker(selected, args.worker)

    import subprocess

    records: list[dict] = []
    next_case = 0
    while next_case < len(selected):
        command = [sys.executable, __file__, "--worker", str(next_case)]
        if args.only:
            command += ["--only", args.only]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        running = None
        for text in child.stdout:
            message = json.loads(text)
            if "begin" in message:
                running = message["begin"]
            else:
                record = message["record"]
                records.append(record)
                print(f"[{message['done'] + 1}/{len(selected)}] {record['id']}: {describe(record)}", file=sys.stderr)
                running = None
                next_case = message["done"] + 1
        status = child.wait()
        if running is not None:
            # The process died inside this case: that is the measurement.
            case = selected[running]
            signal = f"signal {-status}" if status < 0 else f"exit status {status}"
            record = finish(case, {"forward": [], "backward": None,
                                   "error": f"crash: the process died ({signal}) running this case"}, None)
            records.append(record)
            print(f"[{running + 1}/{len(selected)}] {case.id}: {describe(record)}", file=sys.stderr)
            next_case = running + 1
        elif status != 0:
            print(f"measurement worker failed with status {status}", file=sys.stderr)
            return 2
    if args.only:
        return 0

    import torch
    import torch_xla

    record = {
        "schema": SCHEMA,
        "backend": "torch_xla",
        "torch_xla": torch_xla.__version__,
        "torch": torch.__version__,
        "torchvision": torchvision_version,
        "python": platform.python_version(),
        "device": f"XLA CPU device (PJRT_DEVICE={os.environ.get('PJRT_DEVICE')})",
        "measured": datetime.date.today().isoformat(),
        "script": "scripts/measure-fallbacks.py",
        "method": "torch_xla.debug.metrics.executed_fallback_ops() after torch_xla.sync(), forward and, "
                  "where an input requires grad, backward; falls_back excludes host reads "
                  "(aten::_local_scalar_dense, recorded as host_read) and the ops a TPU lowers though "
                  "the CPU device does not (tpu_lowers); value_dependent_shape compares output shapes "
                  "over three seeds on the CPU; a case that kills the process is recorded as a crash",
        "tpu_only_lowerings": TPU_ONLY_LOWERINGS,
        "cases": records,
    }
    version = torch_xla.__version__.split("+")[0]
    short = ".".join(version.split(".")[:2])
    out = args.out or ROOT / "server" / "analyzer" / "data" / f"torch_xla-{short}-fallbacks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {len(records)} cases to {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        traceback.print_exc()
        sys.exit(2)

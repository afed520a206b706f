//! TPU201: `F.grid_sample`, which has no XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for calls to `torch.nn.functional.grid_sample` (and the underlying
    /// `torch.grid_sampler*` ops).
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA has no lowering for `grid_sampler_2d` / `grid_sampler_3d`: its autocast
    /// policy lists them as "included in the AutoCastCPU Policy, but not lowered", and the
    /// backward is a known CPU-fallback op. Every call copies the input and the grid from the
    /// TPU to the host, runs the op on the CPU and copies the result back, cutting the graph in
    /// two. Users porting deformable-attention detectors (RF-DETR, Deformable DETR) report this
    /// as their main slowdown.
    ///
    /// Measured on torch_xla 2.9.0: every mode of 2-D and 3-D `grid_sample` (and
    /// `torch.grid_sampler*`) ran `aten::grid_sampler_2d`/`_3d` and its backward on the CPU.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// sampled = F.grid_sample(features, grid, mode="bilinear", align_corners=False)
    /// ```
    ///
    /// Use instead: a bilinear gather written with tensor ops that lower (compute the four
    /// neighbour indices and weights from `grid`, `torch.gather` the corners, and blend), or
    /// move the sampling out of the training step (for example into the data pipeline).
    ///
    /// ## Known problems
    /// The rule cannot see whether the call runs on a TPU tensor; a `grid_sample` applied to CPU
    /// tensors in a data pipeline is reported too (as `Info` outside hot paths).
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `grid_sample*`, `grid_sampler*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/autocast_mode.cpp` (`grid_sampler_2d/3d` "not lowered")
    /// - PyTorch/XLA issue #2405; roboflow/rf-detr issue #1058
    pub(crate) static GRID_SAMPLE = {
        code: "TPU201",
        name: "grid-sample",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["grid_sample", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d"],
        calls: GRID_SAMPLE_NAMES,
        check: check,
    }
}

const GRID_SAMPLE_NAMES: &[&str] = &[
    "torch.nn.functional.grid_sample",
    "torch.grid_sampler",
    "torch.grid_sampler_2d",
    "torch.grid_sampler_3d",
];

/// TPU201
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context
        .callee_name(call)
        .is_none_or(|name| !name.starts_with("grid_sampl"))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    if target.receiver.is_some() || !GRID_SAMPLE_NAMES.contains(&target.name.as_str()) {
        return;
    }
    super::report_unlowered_call(context, call, &target, None);
}

//! TPU215: torchvision's C++ detection ops (NMS, RoI pooling, deformable convolution).

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for torchvision's custom C++ ops: `torchvision.ops.nms` / `batched_nms`,
    /// `roi_align` / `roi_pool` / `ps_roi_align` / `ps_roi_pool`, `deform_conv2d`, and the module
    /// forms `RoIAlign`, `RoIPool`, `PSRoIAlign`, `PSRoIPool`, `MultiScaleRoIAlign` and
    /// `DeformConv2d`.
    ///
    /// ## Why is this bad?
    /// These are torchvision kernels registered for CPU and CUDA only; PyTorch/XLA has no
    /// kernel for the RoI and deformable ops, and registers `nms` only behind the experimental
    /// `XLA_EXPERIMENTAL=nms` flag. Without it the boxes and scores go to the host, are
    /// filtered there, and come back with a data-dependent shape that also forces a
    /// recompilation for each new box count.
    ///
    /// Measured on torch_xla 2.9.0 with torchvision 0.24.0: `nms`, `batched_nms`, `roi_align` and
    /// `roi_pool` ran `torchvision::nms`/`roi_align`/`roi_pool` (and their backward) on the CPU;
    /// `box_iou` was lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// keep = torchvision.ops.batched_nms(boxes, scores, labels, iou_threshold=0.5)
    /// pooled = roi_align(features, rois, output_size=(7, 7), spatial_scale=0.25)
    /// ```
    ///
    /// Use instead: keep detection post-processing out of the compiled step (run it on the
    /// host after the forward pass, once per batch), or use a fixed-size formulation: top-k
    /// candidates, a dense IoU matrix and a mask instead of a variable-length `keep` list;
    /// RoI pooling as `F.grid_sample`-free bilinear gathers on a fixed number of boxes.
    ///
    /// ## Known problems
    /// Detection models usually call these in inference post-processing, where a host round
    /// trip may be acceptable; the rule reports them as `Info` outside hot paths.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `torchvision.*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/xla_manual_registration.cpp` (`nms` behind
    ///   `XLA_EXPERIMENTAL`); pytorch/xla issue #2487 (`roi_align`)
    pub(crate) static TORCHVISION_DETECTION_OP = {
        code: "TPU215",
        name: "torchvision-detection-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["torchvision"],
        calls: CALLEES,
        check: check,
    }
}

const FUNCTIONS: &[&str] = &[
    "nms",
    "batched_nms",
    "roi_align",
    "roi_pool",
    "ps_roi_align",
    "ps_roi_pool",
    "deform_conv2d",
];

const MODULES: &[&str] = &[
    "RoIAlign",
    "RoIPool",
    "PSRoIAlign",
    "PSRoIPool",
    "MultiScaleRoIAlign",
    "DeformConv2d",
];

/// [`FUNCTIONS`] and [`MODULES`]: the final segment of every callee the rule reports.
const CALLEES: [&str; FUNCTIONS.len() + MODULES.len()] =
    crate::registry::joined(&[FUNCTIONS, MODULES]);

/// TPU215
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(qualified) = context.qualified_name(function) else {
        return;
    };
    let Some(rest) = qualified.strip_prefix("torchvision.ops.") else {
        return;
    };
    let last = rest.rsplit('.').next().unwrap_or(rest);
    let is_module = MODULES.contains(&last);
    if !is_module && !FUNCTIONS.contains(&last) {
        return;
    }
    if syntax::positional_args(arguments)
        .first()
        .is_some_and(|input| helpers::is_on_host(context, *input))
    {
        return;
    }
    let detail = if last.ends_with("nms") {
        "XLA lowers `nms` only with `XLA_EXPERIMENTAL=nms`"
    } else {
        "it has no XLA kernel"
    };
    let message = format!(
        "torchvision `{last}`{} runs on the CPU: {detail}",
        if is_module {
            String::new()
        } else {
            helpers::hot_path_suffix(context)
        }
    );
    let severity = if is_module {
        Severity::Warning
    } else {
        context.hot_path_severity()
    };
    context.report(function.byte_range(), message).severity = severity;
}

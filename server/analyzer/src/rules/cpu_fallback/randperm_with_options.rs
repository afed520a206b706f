//! TPU216: `torch.randperm` on the device with anything but the default options.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::semantic::Device;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.randperm(n, device=<accelerator>, ...)` with a `dtype` other than
    /// `torch.int64`, `pin_memory=True`, a `layout=`, or `n == 0`.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers only "the basic version of randperm(int64_t)"; a non-Long dtype, a
    /// layout, pinned memory or `n == 0` sends the call to the CPU fallback, so the
    /// permutation is generated on the host and copied to the device.
    ///
    /// Measured on torch_xla 2.9.0: `torch.randperm(16, dtype=torch.int32, device=...)` and
    /// `torch.randperm(0, device=...)` ran `aten::randperm` on the CPU; the default form was
    /// lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// perm = torch.randperm(n, dtype=torch.int32, device=device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// perm = torch.randperm(n, device=device).to(torch.int32)
    /// ```
    ///
    /// ## Known problems
    /// Only calls with a `device=` that is not `"cpu"` are reported: a permutation created on
    /// the CPU is not a fallback. A device held in a variable is assumed to be the accelerator.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `randperm.*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `randperm` ("Only support the basic
    ///   version of randperm(int64_t) to start")
    pub(crate) static RANDPERM_WITH_OPTIONS = {
        code: "TPU216",
        name: "randperm-with-options",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["randperm"],
        calls: ["randperm"],
        check: check,
    }
}

/// TPU216
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("randperm") {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if context.qualified_name(function).as_deref() != Some("torch.randperm") {
        return;
    }
    let on_device = context
        .keyword_arg(arguments, "device")
        .is_some_and(|device| context.semantic().device_of_expr(device, 0) != Device::Cpu);
    if !on_device {
        return;
    }
    let dtype = context
        .keyword_arg(arguments, "dtype")
        .filter(|dtype| helpers::torch_dtype(context, *dtype).is_some_and(|d| d != "int64"));
    let pinned = context
        .keyword_arg(arguments, "pin_memory")
        .filter(|value| helpers::literal_bool(*value) == Some(true));
    let layout = context.keyword_arg(arguments, "layout");
    let empty = syntax::argument(arguments, 0, "n", source)
        .filter(|n| helpers::literal_number(*n, source) == Some(0.0));
    let Some((node, why)) = dtype
        .map(|n| (n, "a dtype other than int64"))
        .or(pinned.map(|n| (n, "pin_memory=True")))
        .or(layout.map(|n| (n, "a layout")))
        .or(empty.map(|n| (n, "n == 0")))
    else {
        return;
    };
    let message = format!(
        "`randperm` with {why}{} runs on the CPU: only the default int64 form is lowered",
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(node.byte_range(), message).severity = severity;
}

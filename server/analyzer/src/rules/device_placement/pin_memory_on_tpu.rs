//! TPU410: `pin_memory=True` in code that targets PyTorch/XLA.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `pin_memory=True` passed to a `DataLoader` or a tensor factory in a file that
    /// targets PyTorch/XLA.
    ///
    /// ## Why is this bad?
    /// Pinned (page-locked) host memory speeds up CUDA copies; PyTorch/XLA's transfers do not
    /// use it, and without CUDA PyTorch warns `'pin_memory' argument is set as true but no
    /// accelerator is found`. A factory such as `torch.full(..., pin_memory=True)` is not
    /// lowered and falls back to the CPU. `MpDeviceLoader` overlaps the copies instead.
    ///
    /// TorchTPU is different: pinned memory is supported there and is the fast path —
    /// `x.to("tpu", non_blocking=True)` from a pinned tensor returns at once (asynchronous DMA),
    /// followed by `torch.tpu.synchronize()`. The rule is quiet in TorchTPU files.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(dataset, batch_size=64)
    /// device_loader = pl.MpDeviceLoader(loader, torch_xla.device())  # PyTorch/XLA
    /// ```
    ///
    /// ## Fix safety
    /// The fix removes the argument. It is safe: pinning never changes values.
    ///
    /// ## Known problems
    /// Only files that visibly target PyTorch/XLA are checked: in CUDA and TorchTPU code the
    /// argument is right.
    ///
    /// ## References
    /// - https://github.com/pytorch/pytorch/pull/146821 (the pin-memory warning on devices without
    ///   pinned memory)
    /// - TorchTPU `tests/async_transfer_test.py` (https://github.com/google-pytorch/torch_tpu): on TorchTPU pinned memory and
    ///   `non_blocking=True` are the asynchronous path, so the rule is torch_xla-only
    pub(crate) static PIN_MEMORY_ON_TPU = {
        code: "TPU410",
        name: "pin-memory-on-tpu",
        severity: Warning,
        fix: Always,
        kinds: ["keyword_argument"],
        tokens: ["pin_memory"],
        check: check,
    }
}

/// TPU410
fn check<'t>(context: &mut Context<'t, '_>, keyword: Node<'t>) {
    let source = context.source();
    let (Some(name), Some(value)) = (keyword.field("name"), keyword.field("value")) else {
        return;
    };
    if !syntax::text_is(name, source, "pin_memory") || value.is_not(kind::TRUE) {
        return;
    }
    // Unknown: CUDA code, where pinning helps. TorchTPU: pinned memory is its async path.
    if context.backend() != Backend::TorchXla {
        return;
    }
    let Some(arguments) = context
        .parent(keyword)
        .filter(|p| p.is(kind::ARGUMENT_LIST))
    else {
        return;
    };
    let Some(call) = context.parent(arguments).filter(|c| c.is(kind::CALL)) else {
        return;
    };
    let Some(callee) = context.callee_name(call) else {
        return;
    };
    let is_loader = callee.ends_with("DataLoader");
    let is_factory = context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|q| q.starts_with("torch.") && !q.starts_with("torch.utils"));
    if !is_loader && !is_factory {
        return;
    }
    let message = if is_loader {
        "`pin_memory=True` does not help a TPU".to_string()
    } else {
        format!("`pin_memory=True` on `{callee}` falls back to the CPU on a TPU")
    };
    let severity = context.hot_path_severity();
    let edit = crate::fix::edits::remove_argument(context.source(), arguments, keyword);
    let diagnostic = context.report(keyword.byte_range(), message);
    diagnostic.severity = severity;
    diagnostic.fix = Some(Fix::safe("Remove `pin_memory=True`", vec![edit]));
}

//! TPU217: ops that PyTorch/XLA 2.9 runs on the CPU whatever their arguments (measured).

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for calls to ops that torch_xla 2.9 was measured to run on the CPU whatever their
    /// arguments, and that no more specific rule covers: `torch.isin`, `torch.searchsorted`,
    /// `torch.bucketize`, `torch.logcumsumexp` (and the tensor method), `torch.poisson`, and
    /// `F.glu` when gradients flow (its backward falls back).
    ///
    /// ## Why is this bad?
    /// An op without an XLA lowering is executed through PyTorch/XLA's CPU fallback: the inputs
    /// are copied to the host, the op runs on the CPU, and the result is copied back, cutting the
    /// step's graph in two. `scripts/measure-fallbacks.py` ran each of these on torch_xla 2.9.0
    /// and `torch_xla.debug.metrics.executed_fallback_ops()` named the op: `aten::isin`,
    /// `aten::searchsorted`, `aten::bucketize`, `aten::_logcumsumexp` (forward and backward),
    /// `aten::poisson`, and `aten::glu_backward`.
    ///
    /// ## Example
    /// ```python
    /// keep = torch.isin(token_ids, special_ids)
    /// ```
    ///
    /// Use instead: the same computation with broadcasting, which lowers.
    /// ```python
    /// keep = (token_ids[..., None] == special_ids).any(-1)
    /// ```
    ///
    /// ## Known problems
    /// Calls whose input is known to be on the host are not reported. `F.glu` is quiet under
    /// `torch.no_grad()` / `torch.inference_mode()` (as a `with` block or a decorator), where only
    /// its (lowered) forward runs.
    /// TorchTPU: no public CPU build to measure; the finding speaks of PyTorch/XLA.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `isin.*`, `searchsorted`, `bucketize`, `logcumsumexp*`, `poisson.*`, `glu*`; torch 2.9.0,
    ///   torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `codegen/xla_native_functions.yaml` (none of these ops is listed)
    /// - PyTorch/XLA troubleshooting guide, "CPU fallbacks" (`executed_fallback_ops`)
    pub(crate) static UNLOWERED_OP = {
        code: "TPU217",
        name: "unlowered-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: super::UNLOWERED_OP_NAMES,
        check: check,
    }
}

/// TPU217
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some(callee) = context.callee_name(call) else {
        return;
    };
    // Cheap prefilter on the last name segment before any resolution.
    if !super::UNLOWERED_OPS
        .iter()
        .any(|op| op.name.rsplit('.').next() == Some(callee))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let Some(op) = super::UNLOWERED_OPS
        .iter()
        .find(|op| op.name == target.name)
    else {
        return;
    };
    if !op.backward_only {
        super::report_unlowered_call(context, call, &target, Some(op.advice));
        return;
    }
    if super::under_no_grad(context, call)
        || target
            .input(context.source())
            .is_some_and(|input| helpers::is_on_host(context, input))
    {
        return;
    }
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    let message = format!(
        "The backward of `{}` (`{}`) has no XLA lowering and runs on the CPU; {}",
        context.text(function),
        op.aten,
        op.advice
    );
    let severity = context.hot_path_severity();
    context.report(function.byte_range(), message).severity = severity;
}

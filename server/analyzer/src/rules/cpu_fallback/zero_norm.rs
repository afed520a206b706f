//! TPU214: `torch.norm(x, p=0)`, which counts non-zeros through a CPU fallback.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.norm(x, p=0)`, `torch.norm(x, 0)` and `x.norm(0)` / `x.norm(p=0)`.
    ///
    /// ## Why is this bad?
    /// The 0-"norm" counts non-zero entries. PyTorch/XLA's `norm` lowering treats it as
    /// "a torch.nonzero(), which is not lowered to XLA due to dynamic shapes issue" and calls
    /// the CPU fallback: the tensor is copied to the host and the count back.
    ///
    /// Measured on torch_xla 2.9.0: `torch.norm(x, p=0)` and `x.norm(0)` ran
    /// `aten::norm.ScalarOpt_dim` on the CPU; `torch.linalg.vector_norm(x, ord=0)` and
    /// `torch.count_nonzero` were lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// active = torch.norm(mask, p=0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// active = (mask != 0).sum()
    /// ```
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `norm.*`, `linalg.vector_norm.ord0`, `count_nonzero`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `norm` ("If p==0 it is a torch.nonzero()")
    pub(crate) static ZERO_NORM = {
        code: "TPU214",
        name: "zero-norm",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["norm"],
        calls: ["norm"],
        check: check,
    }
}

/// TPU214
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("norm") {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    if target.name != "torch.norm" {
        return;
    }
    if target
        .input(context.source())
        .is_some_and(|input| helpers::is_on_host(context, input))
    {
        return;
    }
    let Some(p) = target.argument(1, "p", source) else {
        return;
    };
    if helpers::literal_number(p, source) != Some(0.0) {
        return;
    }
    let input = target.input(source).map_or("x".to_string(), |input| {
        helpers::short_code(context.text(input))
    });
    let message = format!(
        "`norm` with p=0{} runs on the CPU (a `nonzero` in disguise); use `({input} != 0).sum()`",
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(p.byte_range(), message).severity = severity;
}

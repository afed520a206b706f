//! TPU213: `addmm` with `alpha` or `beta` other than 1.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.addmm(bias, x, w, beta=..., alpha=...)` and `bias.addmm(...)` /
    /// `addmm_(...)` where `beta` or `alpha` is a literal other than 1.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers `addmm` as a fused matmul-plus-bias only for `beta == 1` and
    /// `alpha == 1`; any other scaling calls the CPU fallback, so the matrices are copied to
    /// the host and the product is computed there. (`baddbmm` lowers its scalars and is not
    /// reported.)
    ///
    /// Measured on torch_xla 2.9.0: `torch.addmm` and `Tensor.addmm` with `alpha` or `beta` other
    /// than 1 ran `aten::addmm` on the CPU; without them, and `torch.baddbmm` with scaling, were
    /// lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// out = torch.addmm(bias, x, w, beta=0.5, alpha=2.0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// out = 0.5 * bias + 2.0 * (x @ w)
    /// ```
    ///
    /// ## Known problems
    /// Scalars held in variables are not followed (no report).
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `addmm.*`, `baddbmm.alpha`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `addmm` (fallback if `beta != 1 ||
    ///   alpha != 1`)
    pub(crate) static SCALED_ADDMM = {
        code: "TPU213",
        name: "scaled-addmm",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["addmm", "addmm_"],
        calls: ["addmm", "addmm_"],
        check: check,
    }
}

/// TPU213
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    let Some(method) = context.callee_name(call) else {
        return;
    };
    if !matches!(method, "addmm" | "addmm_") {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    match context.qualified_name(function) {
        Some(name) if name == "torch.addmm" => {}
        Some(_) => return,
        None => match context.method_call(call) {
            Some((receiver, _)) if helpers::is_probably_tensor(context, receiver) => {}
            _ => return,
        },
    }
    // `beta` and `alpha` are keyword-only.
    let mut scaled: Vec<Node<'_>> = Vec::new();
    for name in ["beta", "alpha"] {
        if let Some(keyword) = context.keyword_arg_node(arguments, name)
            && keyword
                .field("value")
                .and_then(|value| helpers::literal_number(value, source))
                .is_some_and(|value| value != 1.0)
        {
            scaled.push(keyword);
        }
    }
    let Some(first) = scaled.first() else {
        return;
    };
    let what: Vec<&str> = scaled
        .iter()
        .map(|keyword| context.text(*keyword))
        .collect();
    let message = format!(
        "`{method}` with `{}`{} runs on the CPU: only beta=1, alpha=1 is lowered",
        crate::syntax::join(&what, ", "),
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(first.byte_range(), message).severity = severity;
}

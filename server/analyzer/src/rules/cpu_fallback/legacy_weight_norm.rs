//! TPU210: the old `torch.nn.utils.weight_norm`, whose `_weight_norm_interface` has no lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::syntax::NodeExt;
use crate::syntax::node_text;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.utils.weight_norm(module)`, the hook-based weight normalisation
    /// that PyTorch has deprecated in favour of
    /// `torch.nn.utils.parametrizations.weight_norm`.
    ///
    /// ## Why is this bad?
    /// The old API recomputes the weight with `_weight_norm_interface` before every forward
    /// pass, and PyTorch/XLA has no lowering for that op: the weight is copied to the host and
    /// back on every call. A user reported a vocoder taking two hours per step on TPU against one
    /// second on GPU because of it (pytorch/xla#4985). The parametrization API computes the norm
    /// with ordinary tensor ops, which lower.
    ///
    /// ## Example
    /// ```python
    /// conv = torch.nn.utils.weight_norm(nn.Conv1d(80, 512, 7))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// conv = torch.nn.utils.parametrizations.weight_norm(nn.Conv1d(80, 512, 7))
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites `<prefix>.utils.weight_norm` to
    /// `<prefix>.utils.parametrizations.weight_norm`. It is unsafe: the parameters are renamed
    /// (`weight_g` / `weight_v` become `parametrizations.weight.original0` / `original1`), so
    /// existing checkpoints need their keys mapped, and `remove_weight_norm` becomes
    /// `torch.nn.utils.parametrize.remove_parametrizations(module, "weight")`. When the function
    /// was imported by name (`from torch.nn.utils import weight_norm`) no fix is offered.
    ///
    /// ## References
    /// - tpulint TPU pitfall catalog B.3 #36 and "Ops with known missing lowerings" (B.7)
    /// - PyTorch/XLA issue #4985; `codegen/xla_native_functions.yaml` (no `_weight_norm_interface`)
    /// - TorchFix TOR101 (deprecated `weight_norm`)
    pub(crate) static LEGACY_WEIGHT_NORM = {
        code: "TPU210",
        name: "legacy-weight-norm",
        severity: Warning,
        fix: Sometimes,
        kinds: ["call"],
        check: check,
    }
}

/// TPU210
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("weight_norm") {
        return;
    }
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    if context.qualified_name(function).as_deref() != Some("torch.nn.utils.weight_norm") {
        return;
    }
    let message = format!(
        "`{}` runs `_weight_norm_interface` on the CPU every forward pass; use `parametrizations.weight_norm`",
        context.text(function)
    );
    let fix = (function.kind_name() == "attribute")
        .then(|| function.field("attribute"))
        .flatten()
        .filter(|attribute| node_text(*attribute, source) == "weight_norm")
        .map(|attribute| {
            Fix::unsafe_edit(
                "Use `parametrizations.weight_norm`",
                vec![Edit::insert(attribute.start_byte(), "parametrizations.")],
            )
        });
    context.report(function.byte_range(), message).fix = fix;
}

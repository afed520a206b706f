//! TPU303: `torch.masked_select`, whose output length depends on the mask's values.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.masked_select(x, mask)` and `x.masked_select(mask)`.
    ///
    /// ## Why is this bad?
    /// The result has one element per `True` in the mask, so its length is only known once the
    /// mask is computed. PyTorch/XLA falls back to the CPU for `masked_select` unless the
    /// experimental `XLA_EXPERIMENTAL=masked_select` path is enabled; TorchTPU reads the size
    /// back to the host and compiles once per distinct size.
    ///
    /// ## Example
    /// ```python
    /// valid = torch.masked_select(losses, mask)
    /// loss = valid.mean()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = (losses * mask).sum() / mask.sum().clamp(min=1)  # same value, fixed shapes
    /// ```
    ///
    /// ## Known problems
    /// Outside hot paths the finding is informational.
    ///
    /// ## References
    /// - PyTorch/XLA, `torch_xla/csrc/aten_xla_type.cpp` (`masked_select` falls back unless experimental)
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats*, caveat 1 (masked indexing)
    /// - TorchTPU, host round-trip ops (`masked_select` learns its output size on the host)
    pub(crate) static MASKED_SELECT = {
        code: "TPU303",
        name: "masked-select",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["masked_select"],
        calls: ["masked_select"],
        check: check,
    }
}

/// TPU303
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let is_function = context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|name| name == "torch.masked_select");
    if !is_function
        && tensor_values::tensor_method_call(context, call, &["masked_select"]).is_none()
    {
        return;
    }
    let severity = context.hot_path_severity();
    context
        .report(
            call.byte_range(),
            "`masked_select` returns a data-dependent shape: a host sync or CPU fallback, and a recompilation per size",
        )
        .severity = severity;
}

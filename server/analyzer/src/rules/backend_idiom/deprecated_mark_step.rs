//! TPU601: `xm.mark_step()`, deprecated in favour of `torch_xla.sync()`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{DiagnosticTag, Edit, Fix};
use crate::rules::tpu_api;

declare_rule! {
    /// ## What it does
    /// Checks for calls of `torch_xla.core.xla_model.mark_step()` (usually `xm.mark_step()`).
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA marks `mark_step` `@deprecated("Use torch_xla.sync instead")`; it is now a thin
    /// wrapper that calls `torch_xla.sync(wait, reset_scope)` and will be removed. TorchTPU,
    /// which replaces PyTorch/XLA, has no lazy graph to cut at all.
    ///
    /// ## Example
    /// ```python
    /// import torch_xla.core.xla_model as xm
    ///
    /// loss.backward()
    /// optimizer.step()
    /// xm.mark_step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla
    ///
    /// loss.backward()
    /// optimizer.step()
    /// torch_xla.sync()
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the callee with `torch_xla.sync` (same parameters, `wait` and
    /// `reset_scope`) and adds `import torch_xla` when needed. It is safe: `mark_step` does
    /// exactly this call. It needs a PyTorch/XLA release that has `torch_xla.sync` (every
    /// release that deprecates `mark_step` does).
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/core/xla_model.py
    ///   (`@deprecated("Use torch_xla.sync instead")` on `mark_step`)
    /// - TorchTPU `docs/notebooks/eager_mode.py` (https://github.com/google-pytorch/torch_tpu): eager by default, no step marker
    pub(crate) static DEPRECATED_MARK_STEP = {
        code: "TPU601",
        name: "deprecated-mark-step",
        severity: Info,
        fix: Always,
        kinds: ["call"],
        tokens: ["mark_step"],
        calls: ["mark_step"],
        check: check,
    }
}

/// TPU601
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    if context.qualified_name(function).as_deref() != Some("torch_xla.core.xla_model.mark_step") {
        return;
    }
    let sync = tpu_api::torch_xla_expression(context, function, "sync");
    let expression = sync.expression.clone();
    let mut edits = sync.edits();
    edits.push(Edit::replace(function.byte_range(), expression.clone()));
    let diagnostic = context.report(
        function.byte_range(),
        format!(
            "`{}` is deprecated; use `{expression}()`",
            context.text(function)
        ),
    );
    diagnostic.tag = Some(DiagnosticTag::Deprecated);
    diagnostic.fix = Some(Fix::new(
        sync.applicability,
        format!("Replace with `{expression}`"),
        edits,
    ));
}

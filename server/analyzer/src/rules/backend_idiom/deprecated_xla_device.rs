//! TPU602: `xm.xla_device()`, deprecated in favour of `torch_xla.device()`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{DiagnosticTag, Edit, Fix};
use crate::rules::tpu_api;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for calls of `torch_xla.core.xla_model.xla_device()` (usually `xm.xla_device()`).
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA marks `xla_device` `@deprecated("Use torch_xla.device instead")`. TorchTPU,
    /// which replaces PyTorch/XLA, names the device `torch.device("tpu")`.
    ///
    /// ## Example
    /// ```python
    /// import torch_xla.core.xla_model as xm
    ///
    /// device = xm.xla_device()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla
    ///
    /// device = torch_xla.device()
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the callee with `torch_xla.device` and adds `import torch_xla` when
    /// needed. It is offered when the call has no arguments or one positional index (which
    /// `torch_xla.device(index)` takes the same way); `devkind=` has no equivalent. It is safe.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/core/xla_model.py
    ///   (`@deprecated("Use torch_xla.device instead")` on `xla_device`)
    /// - TorchTPU `docs/notebooks/get_started_tpu.py` (https://github.com/google-pytorch/torch_tpu): the device is `torch.device("tpu")`
    pub(crate) static DEPRECATED_XLA_DEVICE = {
        code: "TPU602",
        name: "deprecated-xla-device",
        severity: Info,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["xla_device"],
        calls: ["xla_device"],
        check: check,
    }
}

/// TPU602
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if context.qualified_name(function).as_deref() != Some("torch_xla.core.xla_model.xla_device") {
        return;
    }
    let device = tpu_api::torch_xla_expression(context, function, "device");
    let expression = device.expression.clone();
    let mut edits = device.edits();
    let positional = syntax::positional_args(arguments).len();
    let all_positional = positional == arguments.named_child_count();
    let fixable = all_positional && positional <= 1;
    let message = format!(
        "`{}` is deprecated; use `{expression}()`",
        context.text(function)
    );
    let diagnostic = context.report(function.byte_range(), message);
    diagnostic.tag = Some(DiagnosticTag::Deprecated);
    if fixable {
        edits.push(Edit::replace(function.byte_range(), expression.clone()));
        diagnostic.fix = Some(Fix::new(
            device.applicability,
            format!("Replace with `{expression}`"),
            edits,
        ));
    }
}

//! TPU105: a tensor handed to a progress bar (`tqdm.set_postfix` and friends).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::{helpers, tensor_values};
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for tensors passed to a progress bar's `set_postfix(...)`, `set_postfix_str(...)`,
    /// `set_description(...)` or `set_description_str(...)` inside a loop.
    ///
    /// ## Why is this bad?
    /// tqdm formats every postfix value into text, which reads the tensor's value: the host
    /// waits for the TPU to compute it and copies it back, once per iteration. PyTorch/XLA's
    /// pitfall list names `tqdm.set_postfix(loss=...)` with printing and logging as synchronous
    /// operations that block tracing; TorchTPU treats it as a materialization. (A postfix of
    /// `loss.item()` is reported by TPU101 instead.)
    ///
    /// ## Example
    /// ```python
    /// for batch in (bar := tqdm(loader)):
    ///     loss = train_step(batch)
    ///     bar.set_postfix(loss=loss)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, batch in enumerate(bar := tqdm(loader)):
    ///     loss = train_step(batch)
    ///     if step % 50 == 0:
    ///         bar.set_postfix(loss=loss.item())
    /// ```
    ///
    /// ## Known problems
    /// Values count as tensors only on solid evidence; a dictionary built elsewhere and passed as
    /// `set_postfix(metrics)` is not inspected. Outside a recognised training loop (for example a
    /// loop over a plain `range`) the finding is informational.
    ///
    /// ## References
    /// - PyTorch/XLA, *XLA advanced — Synchronous execution and blocking* (`docs/source/learn/xla-advanced.md`)
    /// - TorchTPU, *Deferred execution* notebook (formatting a tensor materializes it)
    pub(crate) static PROGRESS_BAR_TENSOR = {
        code: "TPU105",
        name: "progress-bar-tensor",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["set_postfix", "set_postfix_str", "set_description", "set_description_str"],
        calls: PROGRESS_METHODS,
        check: check,
    }
}

const PROGRESS_METHODS: &[&str] = &[
    "set_postfix",
    "set_postfix_str",
    "set_description",
    "set_description_str",
];

/// TPU105
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((_, method)) = context.method_call(call) else {
        return;
    };
    if !PROGRESS_METHODS.contains(&context.text(method)) {
        return;
    }
    if context.hot_path().is_none() && !context.semantic().in_loop() {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let mut values = Vec::new();
    for argument in arguments.named_nodes() {
        match argument.kind_key() {
            kind::KEYWORD_ARGUMENT => values.extend(argument.field("value")),
            kind::DICTIONARY => {
                values.extend(
                    argument
                        .named_nodes()
                        .filter(|pair| pair.is(kind::PAIR))
                        .filter_map(|pair| pair.field("value")),
                );
            }
            kind::COMMENT | kind::LIST_SPLAT | kind::DICTIONARY_SPLAT => {}
            _ => values.push(argument),
        }
    }
    let Some(tensor) = values
        .into_iter()
        .find(|value| tensor_values::is_confident_tensor(context, *value))
    else {
        return;
    };
    let severity = if context.hot_path().is_some() {
        Severity::Warning
    } else {
        Severity::Info
    };
    let message = format!(
        "Progress bar formats tensor `{}` every iteration, waiting for the device",
        helpers::short_code(context.text(tensor))
    );
    context.report(tensor.byte_range(), message).severity = severity;
}

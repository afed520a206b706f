//! TPU304: `unique`, `unique_consecutive`, `bincount` and `histc`, whose output shape depends on data.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.unique`, `torch.unique_consecutive`, `torch.bincount` and `torch.histc`
    /// (and their tensor-method forms) on tensors.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA has no lowering for these operations, so they run on the CPU (a device→host→
    /// device round trip); its maintainers note that "unique and bincount would be very difficult
    /// to support since the output shape … [is] input value dependent". TorchTPU reads the
    /// output size back to the host and compiles once per distinct size.
    ///
    /// ## Example
    /// ```python
    /// counts = torch.bincount(labels)
    /// classes = labels.unique()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// counts = F.one_hot(labels, num_classes).sum(0)          # fixed number of bins
    /// counts = torch.zeros(num_classes, device=labels.device).scatter_add_(
    ///     0, labels, torch.ones_like(labels, dtype=torch.float))
    /// ```
    /// For `unique`, sort and compare neighbours, keeping a fixed-size mask.
    ///
    /// ## Known problems
    /// `torch.histc` has a fixed number of bins, but is still not lowered by PyTorch/XLA and runs
    /// on the CPU. Outside hot paths the finding is informational. NumPy's `np.unique` is never
    /// reported.
    ///
    /// ## References
    /// - PyTorch/XLA, `codegen/xla_native_functions.yaml` (no `_unique2`, `unique_consecutive`, `bincount`, `histc`)
    /// - PyTorch/XLA issue #4511 (maintainer on `unique` / `bincount`), #3297
    /// - TorchTPU, host round-trip ops (`unique`, `unique_consecutive`, `bincount`, `histc`)
    pub(crate) static VALUE_DEPENDENT_OUTPUT_OP = {
        code: "TPU304",
        name: "value-dependent-output-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["unique", "unique_consecutive", "bincount", "histc"],
        calls: OPERATIONS,
        check: check,
    }
}

const OPERATIONS: &[&str] = &["unique", "unique_consecutive", "bincount", "histc"];

/// TPU304
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let operation = match context.semantic().call_qualified_name(call) {
        Some(name) => match name.strip_prefix("torch.") {
            Some(function) if OPERATIONS.contains(&function) => format!("torch.{function}"),
            _ => return,
        },
        None => match tensor_values::tensor_method_call(context, call, OPERATIONS) {
            Some((_, method)) => format!(".{method}()"),
            None => return,
        },
    };
    // On a host tensor (`best = logits.argmax(-1).cpu()`; `for seq in best:`) the op runs on
    // the host: no device round trip, no compiled shape.
    let input = match context.method_call(call) {
        Some((receiver, _)) if operation.starts_with('.') => Some(receiver),
        _ => context
            .call_parts(call)
            .and_then(|(_, arguments)| syntax::positional_args(arguments).first().copied()),
    };
    if input.is_some_and(|input| helpers::is_on_host(context, input)) {
        return;
    }
    let severity = context.hot_path_severity();
    let message =
        format!("`{operation}` has no static output shape: a CPU fallback or host sync on TPU");
    context.report(call.byte_range(), message).severity = severity;
}

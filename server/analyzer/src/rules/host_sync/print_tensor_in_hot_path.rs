//! TPU103: `print` of a tensor in a hot path.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::semantic::ValueKind;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `print(...)` (and PyTorch/XLA's `xm.master_print(...)`) whose arguments include
    /// a tensor, directly or interpolated in an f-string, inside a hot path.
    ///
    /// ## Why is this bad?
    /// Printing a tensor formats its values, so the host waits for the device to compute them
    /// and copies them back. PyTorch/XLA's advanced guide names printing and logging among the
    /// synchronous operations that block tracing; in TorchTPU `print(tensor)` is a
    /// materialization and, under `torch.compile`, a graph break. Printed every step, it
    /// serialises the host and the TPU.
    ///
    /// ## Example
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     loss = loss_fn(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     print(f"step {step}: loss {loss}")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     loss = loss_fn(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     if step % 100 == 0:
    ///         print(f"step {step}: loss {loss}")
    /// ```
    /// With PyTorch/XLA, `xm.add_step_closure(lambda l: print(l), args=(loss,))` prints after the
    /// step's graph ran.
    ///
    /// ## Known problems
    /// A print that is already throttled by an `if step % N == 0:` is still reported, with the
    /// same severity: the rule does not evaluate how often the branch runs. Arguments are only
    /// counted as tensors on solid evidence (a guessed `forward` parameter alone is not enough).
    /// Outside hot paths, a print that repeats with a loop of its function (or of module-level
    /// code) that is not an epoch loop and that no throttle guards is reported at information
    /// severity; a print that runs once (after training, per epoch) is not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *XLA advanced — Synchronous execution and blocking* (`docs/source/learn/xla-advanced.md`)
    /// - TorchTPU, *Deferred execution* notebook: `print(tensor)` is a materialization
    pub(crate) static PRINT_TENSOR_IN_HOT_PATH = {
        code: "TPU103",
        name: "print-tensor-in-hot-path",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["print", "master_print"],
        calls: ["print", "master_print"],
        check: check,
    }
}

/// TPU103
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if !is_print_call(context, call) {
        return;
    }
    let Some((severity, place)) = context.repeated_host_read() else {
        return;
    };
    // An error message is built at most once.
    if tensor_values::in_error_or_throttled_path(context, call) {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(tensor) = syntax::positional_args(arguments)
        .into_iter()
        .find_map(|argument| printed_tensor(context, argument))
    else {
        return;
    };
    let message = format!(
        "`print` of tensor `{}` {place} waits for the device",
        helpers::short_code(context.text(tensor)),
    );
    context.report(call.byte_range(), message).severity = severity;
}

/// `print(...)` (the builtin, not a local rebinding) or `xm.master_print(...)`.
pub(crate) fn is_print_call<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((function, _)) = context.call_parts(call) else {
        return false;
    };
    if function.is(kind::IDENTIFIER) {
        return context.text_is(function, "print")
            && context.fact(function).kind == ValueKind::Unknown;
    }
    context
        .qualified_name(function)
        .is_some_and(|name| name.starts_with("torch_xla") && name.ends_with(".master_print"))
}

/// The tensor a print argument shows: the argument itself, or an f-string interpolation.
fn printed_tensor<'t>(context: &Context<'t, '_>, argument: Node<'t>) -> Option<Node<'t>> {
    if argument.is(kind::STRING) {
        return tensor_values::fstring_interpolations(argument)
            .into_iter()
            .find(|expression| tensor_values::is_confident_tensor(context, *expression));
    }
    tensor_values::is_confident_tensor(context, argument).then_some(argument)
}

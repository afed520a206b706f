//! TPU109: a loop whose trip count comes from a tensor value (`range(int(k.item()))`).

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
    /// Checks for `range(...)` whose bounds are read from a tensor: `range(int(k.item()))`,
    /// `range(n.item())`, `range(int(lengths.max()))`, `range(t)`.
    ///
    /// ## Why is this bad?
    /// Python needs the number before the loop starts, so the tensor is materialized (a host
    /// sync). Worse, the loop is unrolled into the traced graph: PyTorch/XLA's troubleshooting
    /// guide warns that "loops with a different number of iterations between steps" require
    /// recompilations, so every new trip count compiles a new graph.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x, steps):
    ///     for _ in range(int(steps.max().item())):
    ///         x = self.block(x)
    ///     return x
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x, steps):
    ///     for i in range(self.max_steps):  # fixed trip count
    ///         x = torch.where(i < steps, self.block(x), x)
    ///     return x
    /// ```
    /// PyTorch/XLA also offers `fori_loop` and `scan` for loops that must stay in the graph.
    ///
    /// ## Known problems
    /// Only bounds written inside the `range(...)` call are inspected; a count read into a
    /// variable first (`n = k.item()`; `range(n)`) is not followed. Outside hot paths the finding
    /// is informational.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats*, caveat 1 (`docs/source/learn/troubleshoot.md`)
    /// - PyTorch/XLA, `docs/source/perf/fori_loop.md`
    /// - TorchTPU, *Deferred execution* notebook (reading a value materializes it)
    pub(crate) static DATA_DEPENDENT_LOOP_COUNT = {
        code: "TPU109",
        name: "data-dependent-loop-count",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: ["range"],
        check: check,
    }
}

/// TPU109
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if function.is_not(kind::IDENTIFIER)
        || !context.text_is(function, "range")
        || context.fact(function).kind != ValueKind::Unknown
    {
        return;
    }
    let Some(source_tensor) = syntax::positional_args(arguments)
        .into_iter()
        .find_map(|bound| tensor_read(context, bound, 0))
    else {
        return;
    };
    let severity = context.hot_path_severity();
    let message = format!(
        "Loop count read from tensor `{}`: a host sync, and a recompilation for each new count",
        helpers::short_code(context.text(source_tensor))
    );
    context.report(call.byte_range(), message).severity = severity;
}

/// The tensor whose value a `range` bound reads, if any.
fn tensor_read<'t>(context: &Context<'t, '_>, bound: Node<'t>, depth: usize) -> Option<Node<'t>> {
    if depth > 6 {
        return None;
    }
    let bound = syntax::unparenthesize(bound);
    match bound.kind_key() {
        kind::CALL => {
            let (function, arguments) = context.call_parts(bound)?;
            // `k.item()` / `k.tolist()` on a tensor.
            if let Some((receiver, method)) = context.method_call(bound)
                && matches!(context.text(method), "item" | "tolist")
            {
                return (helpers::is_probably_device_tensor(context, receiver)
                    && !tensor_values::is_known_non_tensor(context, receiver))
                .then_some(receiver);
            }
            // `int(k)`, `max(...)` and friends: look inside.
            if function.is(kind::IDENTIFIER)
                && matches!(
                    context.text(function),
                    "int" | "float" | "round" | "max" | "min" | "abs"
                )
            {
                return syntax::positional_args(arguments)
                    .into_iter()
                    .find_map(|argument| tensor_read(context, argument, depth + 1));
            }
            tensor_values::is_confident_tensor(context, bound).then_some(bound)
        }
        kind::BINARY_OPERATOR => {
            syntax::sides(bound).find_map(|side| tensor_read(context, side, depth + 1))
        }
        kind::IDENTIFIER | kind::ATTRIBUTE | kind::SUBSCRIPT => {
            tensor_values::is_confident_tensor(context, bound).then_some(bound)
        }
        _ => None,
    }
}

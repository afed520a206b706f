//! TPU106: `float(t)`, `int(t)`, `bool(t)` or `math.*(t)` on a tensor in a hot path or a loop.

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
    /// Checks for `float(t)`, `int(t)`, `bool(t)` and `complex(t)` — `math` functions such as
    /// `math.isfinite(t)` or `math.sqrt(t)`, and `max(1.0, t)` / `min(t, 0)` against a Python
    /// number — applied to a tensor inside a hot path (a warning), or in a loop outside hot
    /// paths (information: a reproducer's loop that computes on the device and never syncs, so
    /// each `float()` runs the graph built so far), or in straight-line module-level code ahead
    /// of a step marker written later at module level (information: the conversion runs the
    /// pending graph before the marker, as an execution of its own).
    ///
    /// ## Why is this bad?
    /// Converting a tensor to a Python number is `.item()` in disguise: the host waits for the
    /// TPU to compute the value and copies it back (PyTorch/XLA counts it as
    /// `aten::_local_scalar_dense`). PyTorch/XLA's troubleshooting guide lists `item()`-style
    /// conversions first among its performance caveats; TorchTPU treats them as
    /// materializations and graph breaks.
    ///
    /// ## Example
    /// ```python
    /// def train_step(batch):
    ///     loss = model(batch).mean()
    ///     loss.backward()
    ///     return float(loss)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def train_step(batch):
    ///     loss = model(batch).mean()
    ///     loss.backward()
    ///     return loss.detach()  # convert when logging, every N steps
    /// ```
    ///
    /// ## Known problems
    /// Conversions inside `range(...)` are reported by TPU109 instead. Arguments count as
    /// tensors only on solid evidence: a helper's unannotated parameter counts when every call
    /// of the helper in the file passes a device tensor (`self.loss_masks(out, num_boxes)` after
    /// `num_boxes = torch.clamp(n / world_size, min=1)` of a device `n`). Conversions that run once (outside loops and hot paths,
    /// except ahead of a module-level step marker),
    /// per epoch (in a loop around a training or loader loop), in throttled branches, or in loops of library functions that no hot path of the file
    /// reaches (see `library-code`) are not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats* (`docs/source/learn/troubleshoot.md`)
    /// - TorchTPU, *Deferred execution* notebook: reading a value is a materialization
    pub(crate) static TENSOR_TO_PYTHON_NUMBER = {
        code: "TPU106",
        name: "tensor-to-python-number",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: CALLEES,
        check: check,
    }
}

/// The builtins that turn their argument into a Python number (or compare it with one).
const CONVERTERS: &[&str] = &["float", "int", "bool", "complex", "max", "min"];

/// [`CONVERTERS`] and [`MATH_FUNCTIONS`]: the callee of every call the rule reports.
const CALLEES: [&str; CONVERTERS.len() + MATH_FUNCTIONS.len()] =
    crate::registry::joined(&[CONVERTERS, MATH_FUNCTIONS]);

const MATH_FUNCTIONS: &[&str] = &[
    "isfinite", "isnan", "isinf", "sqrt", "log", "exp", "floor", "ceil", "fabs", "pow", "log2",
    "log10",
];

/// TPU106
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let converter = match function.kind_key() {
        kind::IDENTIFIER if CONVERTERS.contains(&context.text(function)) => {
            if context.fact(function).kind != ValueKind::Unknown {
                return;
            }
            context.text(function).to_string()
        }
        // `math.sqrt(t)`, and `sqrt(t)` after `from math import sqrt`.
        kind::ATTRIBUTE | kind::IDENTIFIER => match context.qualified_name(function) {
            Some(name)
                if name
                    .strip_prefix("math.")
                    .is_some_and(|f| MATH_FUNCTIONS.contains(&f)) =>
            {
                name
            }
            _ => return,
        },
        _ => return,
    };
    let Some((severity, place)) = context.host_value_read() else {
        return;
    };
    // An error message is built at most once.
    if tensor_values::in_error_or_throttled_path(context, call) {
        return;
    }
    let positional = syntax::positional_args(arguments);
    let value = if matches!(converter.as_str(), "max" | "min") {
        // `max(1.0, loss)` compares a Python number with the tensor: a host read. (`max(a, b)`
        // of two tensors, or over an iterable, is not.)
        let has_number = positional
            .iter()
            .any(|a| matches!(syntax::unparenthesize(*a).kind_name(), "integer" | "float"));
        if positional.len() != 2 || !has_number {
            return;
        }
        positional
            .iter()
            .copied()
            .find(|a| !matches!(syntax::unparenthesize(*a).kind_name(), "integer" | "float"))
    } else {
        positional.first().copied()
    };
    let Some(value) = value else {
        return;
    };
    if !tensor_values::is_confident_tensor(context, value) || inside_range_call(context, call) {
        return;
    }
    let shown = if matches!(converter.as_str(), "max" | "min") {
        helpers::short_code(context.text(call))
    } else {
        format!("{converter}({})", helpers::short_code(context.text(value)))
    };
    let message = format!("`{shown}` {place} waits for the device");
    context.report(call.byte_range(), message).severity = severity;
}

/// Whether `node` sits in the arguments of a `range(...)` call (TPU109's finding).
pub(crate) fn inside_range_call<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let mut current = context.parent(node);
    for _ in 0..6 {
        let Some(parent) = current else { return false };
        if parent.is(kind::CALL)
            && context
                .call_parts(parent)
                .is_some_and(|(function, _)| context.text_is(function, "range"))
        {
            return true;
        }
        if parent.is_any(&[kind::BLOCK, kind::EXPRESSION_STATEMENT]) {
            return false;
        }
        current = context.parent(parent);
    }
    false
}

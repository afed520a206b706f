//! TPU107: Python control flow (`if`, `while`, `assert`, `x if c else y`) on a tensor value.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `if`, `elif`, `while`, `assert` and conditional expressions whose condition is
    /// a tensor — `if (x > 0).all():`, `while err > tol:`, `assert t.sum() > 0`,
    /// `a if t.max() > 0 else b` — and for `and` / `or` / `not` used as values on a tensor
    /// (`scale * (t or 1.0)`, `keep = t.any() and flag`, `empty = not t.any()`: Python reads the
    /// truth value of the left operand, or of the operand of `not`), inside a hot path (a
    /// warning) or in a loop outside hot paths (information: each iteration waits, but nothing
    /// says the loop runs every step — a reproducer's loop that computes on the device and never
    /// syncs, an iterative solver), or in straight-line module-level code ahead of a step marker
    /// written later at module level (information: a script or reproducer marks with
    /// `xm.mark_step()` / `torch_xla.sync()` where its graph should run, and the condition runs
    /// the pending graph before that as an execution of its own, pytorch/xla#3429).
    ///
    /// ## Why is this bad?
    /// Python must know the condition's truth value, so the tensor is materialized: the host
    /// waits for the TPU and copies the value back. PyTorch/XLA's recompilation notes add that
    /// each combination of branches is a different graph, so data-dependent branches also cause
    /// recompilations; TorchTPU documents `if (x > 0).all():` as a materialization that
    /// "implicitly calls .item()", and under `torch.compile` it is a graph break.
    ///
    /// ## Example
    /// ```python
    /// class Net(nn.Module):
    ///     def forward(self, x):
    ///         h = self.proj(x)
    ///         if (h < 0).any():
    ///             h = h.clamp(min=0)
    ///         return h
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class Net(nn.Module):
    ///     def forward(self, x):
    ///         h = self.proj(x)
    ///         return torch.where(h < 0, torch.zeros_like(h), h)
    /// ```
    /// Flags that never change during training belong in `__init__` (`self.use_bias`), not in
    /// tensors. An input check (`if labels.max() >= vocab_size: raise ValueError(…)`,
    /// `assert (x >= 0).all()`) is still a wait on every step, whether or not it raises, and is
    /// reported as a warning too; its message says it only feeds a check that raises, since the fix is to drop the check from
    /// the step, check the host data before it moves, or make the check opt-in.
    ///
    /// ## Known problems
    /// Conditions count as tensors only on solid evidence: `if mask:` on an unannotated
    /// `forward` parameter is not reported, nor are `is None` / `in` tests, nor
    /// `mask = mask or default` on a parameter that may be `None` (`Optional[Tensor]`, a `None`
    /// default: a `None` test in the writer's mind, although a tensor passed there is read).
    /// The right side of `step % N == 0 and …` runs every N steps and is not reported. Code that
    /// runs once (outside loops and hot paths, after a loop; at module level, after the last
    /// module-level step marker or before a loop between it and the marker), per-epoch code (in a loop around a
    /// training or loader loop), throttled branches, and loops of
    /// library functions that no hot path of the file reaches (information is dropped there,
    /// see `library-code`) are not reported. Comparisons with a `clip_grad_norm_` result are
    /// TPU108's.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* §3 (`docs/source/notes/source_of_recompilation.md`)
    /// - PyTorch/XLA, *PyTorch on XLA devices — Unexpected tensor materialization* (`docs/source/learn/pytorch-on-xla-devices.md`)
    /// - TorchTPU, *Deferred execution* notebook: data-dependent control flow materializes
    pub(crate) static TENSOR_CONDITION_IN_HOT_PATH = {
        code: "TPU107",
        name: "tensor-condition-in-hot-path",
        severity: Warning,
        fix: None,
        kinds: [
            "if_statement",
            "elif_clause",
            "while_statement",
            "assert_statement",
            "conditional_expression",
            "boolean_operator",
            "not_operator",
        ],
        check: check,
    }
}

/// TPU107
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if node.is_any(&[kind::BOOLEAN_OPERATOR, kind::NOT_OPERATOR]) {
        check_value_operator(context, node);
        return;
    }
    let Some(condition) = condition_of(node) else {
        return;
    };
    let Some((severity, place)) = context.host_value_read() else {
        return;
    };
    let Some(tensor) = tensor_condition(context, condition, 0) else {
        return;
    };
    let statement = match node.kind_key() {
        kind::IF_STATEMENT => "`if`",
        kind::ELIF_CLAUSE => "`elif`",
        kind::WHILE_STATEMENT => "`while`",
        kind::ASSERT_STATEMENT => "`assert`",
        _ => "Conditional expression",
    };
    let message = format!(
        "{statement} on tensor `{}` {place} waits for the device{}",
        helpers::short_code(context.text(tensor)),
        helpers::raising_check_hint(context, tensor)
    );
    context.report(tensor.byte_range(), message).severity = severity;
}

/// `t or 1.0`, `t and x`, `not t` used as a value: Python reads the truth value of `t` (the left
/// operand of `or`/`and`, the operand of `not`) just as `if t:` does. Operators whose truth value
/// an enclosing condition or operator reads are left to it.
fn check_value_operator<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if is_read_by_enclosing(context, node) {
        return;
    }
    let operand = match node.kind_key() {
        kind::NOT_OPERATOR => node.field("argument"),
        _ => node.field("left"),
    };
    let Some(operand) = operand else {
        return;
    };
    let Some((severity, place)) = context.host_value_read() else {
        return;
    };
    let Some(tensor) = tensor_condition(context, operand, 0) else {
        return;
    };
    // `mask = mask or default` on an `Optional[Tensor]` parameter means "if it is None".
    if tensor_values::is_optional_parameter(context, tensor) {
        return;
    }
    let message = format!(
        "`and`/`or`/`not` reads the truth value of tensor `{}` {place}, waiting for the device",
        helpers::short_code(context.text(tensor)),
    );
    context.report(tensor.byte_range(), message).severity = severity;
}

/// Whether an enclosing condition or `not`/`and`/`or` reads the truth value of `node`.
fn is_read_by_enclosing<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let mut child = node;
    for _ in 0..syntax::MAX_EXPR_DEPTH {
        let Some(parent) = context.parent(child) else {
            return false;
        };
        match parent.kind_key() {
            kind::PARENTHESIZED_EXPRESSION => {}
            kind::NOT_OPERATOR => return true,
            kind::BOOLEAN_OPERATOR => {
                // The left operand is always read; the right one only when the operator's own
                // result is.
                if parent
                    .field("left")
                    .is_some_and(|left| left.id() == child.id())
                {
                    return true;
                }
            }
            _ => {
                return condition_of(parent).is_some_and(|condition| condition.id() == child.id());
            }
        }
        child = parent;
    }
    false
}

/// The condition of an `if`/`elif`/`while`/`assert` or a conditional expression.
pub(crate) fn condition_of(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind_key() {
        kind::IF_STATEMENT | kind::ELIF_CLAUSE | kind::WHILE_STATEMENT => node.field("condition"),
        kind::ASSERT_STATEMENT => node.named_child(0),
        kind::CONDITIONAL_EXPRESSION => node.named_child(1),
        _ => None,
    }
}

/// The part of a condition that makes Python read a tensor's truth value, if any.
fn tensor_condition<'t>(
    context: &Context<'t, '_>,
    condition: Node<'t>,
    depth: usize,
) -> Option<Node<'t>> {
    if depth > 8 {
        return None;
    }
    let condition = syntax::unparenthesize(condition);
    match condition.kind_key() {
        kind::NOT_OPERATOR => condition
            .field("argument")
            .and_then(|argument| tensor_condition(context, argument, depth + 1)),
        kind::BOOLEAN_OPERATOR => {
            let left = condition.field("left");
            // `step % 100 == 0 and err < tol`: the right side runs only every 100 steps.
            let throttled = condition
                .field("operator")
                .is_some_and(|operator| context.text_is(operator, "and"))
                && left.is_some_and(|left| tensor_values::is_modulo_test(context, left));
            let right = condition.field("right").filter(|_| !throttled);
            [left, right]
                .into_iter()
                .flatten()
                .find_map(|side| tensor_condition(context, side, depth + 1))
        }
        kind::COMPARISON_OPERATOR => {
            let is_tensor_comparison = tensor_values::is_value_comparison(context, condition)
                && !has_python_literal_operand(condition)
                && tensor_values::is_confident_tensor(context, condition);
            is_tensor_comparison.then_some(condition)
        }
        kind::IDENTIFIER | kind::CALL | kind::ATTRIBUTE | kind::SUBSCRIPT => {
            tensor_values::is_confident_tensor(context, condition).then_some(condition)
        }
        _ => None,
    }
}

fn has_python_literal_operand(comparison: Node<'_>) -> bool {
    comparison
        .named_nodes()
        .any(|operand| operand.is_any(&[kind::STRING, kind::NONE, kind::LIST, kind::TUPLE]))
}

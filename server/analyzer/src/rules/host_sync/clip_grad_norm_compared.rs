//! TPU108: the tensor returned by `clip_grad_norm_` compared or converted in Python.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for the total norm returned by `torch.nn.utils.clip_grad_norm_` (or
    /// `accelerator.clip_grad_norm_`) used as a Python value: compared in an `if`, `while`,
    /// `assert` or conditional expression (`if norm > max_norm:`), or converted with `float()`,
    /// `math.isfinite()` and similar.
    ///
    /// ## Why is this bad?
    /// `clip_grad_norm_` returns the norm as a tensor on the device. Branching on it forces the
    /// host to wait for the backward pass and the norm to be computed, then copies the value
    /// back, every step. PyTorch/XLA's troubleshooting guide calls out exactly this
    /// `item()`-style control flow around gradient clipping as problematic for performance (and
    /// patches `clip_grad_norm_` internally to use `torch.where`).
    ///
    /// ## Example
    /// ```python
    /// norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// if norm > 100:
    ///     optimizer.zero_grad()
    /// else:
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// # skip bad steps on the device: scale the update instead of branching
    /// scale = torch.where(norm > 100, 0.0, 1.0)
    /// for p in model.parameters():
    ///     p.grad.mul_(scale)
    /// optimizer.step()
    /// ```
    /// or log the norm every N steps only.
    ///
    /// ## Known problems
    /// The norm is followed through one local assignment (`norm = clip_grad_norm_(...)`); a norm
    /// stored on `self` or returned from a helper is not tracked.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — Known Performance Caveats*, caveat 2 (`docs/source/learn/troubleshoot.md`)
    /// - TorchTPU, *Deferred execution* notebook (reading a value materializes it)
    pub(crate) static CLIP_GRAD_NORM_COMPARED = {
        code: "TPU108",
        name: "clip-grad-norm-compared",
        severity: Warning,
        fix: None,
        kinds: ["comparison_operator", "call"],
        tokens: ["clip_grad_norm_", "clip_grad_norm"],
        calls: ["float", "bool", "int", "math.isfinite", "math.isnan", "math.isinf"],
        check: check,
    }
}

const CONVERTERS: WordList = word_list!["float", "bool", "int"];
const MATH_FUNCTIONS: WordList = word_list!["math.isfinite", "math.isnan", "math.isinf"];

/// TPU108
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    let operand = match node.kind_key() {
        kind::COMPARISON_OPERATOR => {
            if !tensor_values::is_value_comparison(context, node) || !is_condition(context, node) {
                return;
            }
            let operands: Vec<Node<'_>> = node.named_nodes().collect();
            operands
                .into_iter()
                .find(|operand| is_grad_norm(context, *operand))
        }
        kind::CALL => {
            let Some((function, arguments)) = context.call_parts(node) else {
                return;
            };
            let is_converter = (function.is(kind::IDENTIFIER)
                && CONVERTERS.contains(&context.text(function)))
                || context
                    .qualified_name(function)
                    .is_some_and(|name| MATH_FUNCTIONS.contains(&name.as_str()));
            if !is_converter {
                return;
            }
            syntax::positional_args(arguments)
                .first()
                .copied()
                .filter(|argument| is_grad_norm(context, *argument))
        }
        _ => None,
    };
    if operand.is_none() {
        return;
    }
    let severity = context.hot_path_severity();
    context
        .report(
            node.byte_range(),
            "Python reads the `clip_grad_norm_` result, waiting for the device every step",
        )
        .severity = severity;
}

/// A `clip_grad_norm_(...)` call, or a local name last bound to one.
fn is_grad_norm<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    // Most files never mention it; the name lookup below walks the scope, so skip it early.
    if !context.source_mentions("clip_grad_norm") {
        return false;
    }
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::CALL => is_clip_call(context, expr),
        kind::IDENTIFIER => {
            tensor_values::last_assignment_value(context, context.text(expr), expr)
                .is_some_and(|value| is_clip_call(context, syntax::unparenthesize(value)))
                // `loss, grad_norm = train_step(...)` where the function of the file returns
                // its `clip_grad_norm_` result: the value's origin, carried through the return.
                || context
                    .fact(expr)
                    .origin
                    .and_then(|origin| context.semantic().origin_node(origin))
                    .is_some_and(|node| node.is(kind::CALL) && is_clip_call(context, node))
        }
        _ => false,
    }
}

fn is_clip_call<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "clip_grad_norm_" | "clip_grad_norm"))
}

/// Whether a comparison's truth value is read by Python: it is (part of) the condition of an
/// `if`, `elif`, `while`, `assert` or conditional expression.
fn is_condition<'t>(context: &Context<'t, '_>, comparison: Node<'t>) -> bool {
    let mut child = comparison;
    let mut current = context.parent(comparison);
    for _ in 0..8 {
        let Some(parent) = current else { return false };
        match parent.kind_key() {
            kind::PARENTHESIZED_EXPRESSION | kind::NOT_OPERATOR | kind::BOOLEAN_OPERATOR => {}
            kind::IF_STATEMENT
            | kind::ELIF_CLAUSE
            | kind::WHILE_STATEMENT
            | kind::ASSERT_STATEMENT
            | kind::CONDITIONAL_EXPRESSION => {
                return super::tensor_condition_in_hot_path::condition_of(parent)
                    .is_some_and(|condition| condition.id() == child.id());
            }
            _ => return false,
        }
        child = parent;
        current = context.parent(parent);
    }
    false
}

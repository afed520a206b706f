//! Which bindings of a training loop flow into its backward call: `out = model(x)` is a tensor
//! when `loss = criterion(out, y)` and `loss.backward()` follow, whatever `model` is.
//!
//! A training loop's callables are often parameters or names the file never defines (a
//! `train(model, loader, optimizer, criterion)` function, a bug report's loop posted without its
//! setup), so what they return is of unknown kind and a host read of it (`float(out.sum())`,
//! `out.argmax(1).cpu().numpy()`) would go unreported. Autograd's contract supplies the
//! evidence instead: what `.backward()` is called on is a tensor, and the values it was computed
//! from by tensor operations are tensors too. The pre-pass computes this once per loop that
//! calls backward itself (not an epoch loop around one), when the loop's summary is complete; the
//! index makes a binding listed here a device tensor only when it knows nothing else of its value.
//!
//! Only tensor positions propagate, to keep Python numbers out: the receiver of a method
//! (`out.sum()`), the positional arguments of a function or of an unknown callable
//! (`criterion(out, y)`, `F.cross_entropy(logits, labels)`), both operands of `+` / `-` (`ce +
//! kl`), and of `*` / `/` only operands that are not plain names (`loss / accumulation` says
//! nothing about `accumulation`).

use crate::kind;
use tree_sitter::Node;

use crate::syntax::{self, NodeExt, node_text};

use super::summaries::Resolver;

/// How deep an expression is followed (operands of operands).
const MAX_DEPTH: usize = 12;

/// The bindings of `loop_node`'s body that flow into a backward call made in that body: each
/// as the bound name and the assignment's start relative to the loop's start (stable when edits
/// elsewhere move the loop). Nested function and class bodies are not the loop's code.
pub(crate) fn bindings_into_backward(
    loop_node: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
) -> Vec<(String, usize)> {
    let Some(body) = loop_node.field("body") else {
        return Vec::new();
    };
    let mut statements = Vec::new();
    collect_statements(body, &mut statements, 0);
    let mut live: Vec<&str> = Vec::new();
    let mut found = Vec::new();
    // Backwards through the body: a backward call makes what it differentiates live, and a
    // binding before a use of a live name makes the names its value is computed from live in
    // turn. (A binding after the last backward call feeds no backward of this iteration.)
    for statement in statements.iter().rev() {
        if statement.is(kind::EXPRESSION_STATEMENT)
            && let Some(call) = statement.named_child(0)
            && let Some(loss) = backward_operand(call, source)
        {
            operands(loss, source, resolver, &mut live, 0);
            continue;
        }
        let Some(assignment) = statement
            .named_child(0)
            .filter(|n| matches!(n.kind_name(), "assignment" | "augmented_assignment"))
        else {
            continue;
        };
        let (Some(left), Some(right)) = (assignment.field("left"), assignment.field("right"))
        else {
            continue;
        };
        let mut bound_live = false;
        // `ids, mask = ids.to(device), mask.to(device)`: each name is bound to its own element,
        // which is what makes it live (and only that element's operands become live).
        let pairs: Vec<(Node<'_>, Node<'_>)> = match paired_elements(left, right) {
            Some(pairs) => pairs,
            None => targets(left).into_iter().map(|t| (t, right)).collect(),
        };
        let mut live_values = Vec::new();
        for (target, value) in pairs {
            let name = node_text(target, source);
            if live.contains(&name) {
                bound_live = true;
                if assignment.is(kind::ASSIGNMENT) && binds_computed_value(value) {
                    let at = assignment.start_byte() - loop_node.start_byte();
                    if !found.iter().any(|(n, a)| n == name && *a == at) {
                        found.push((name.to_string(), at));
                    }
                }
                if !live_values.iter().any(|v: &Node<'_>| v.id() == value.id()) {
                    live_values.push(value);
                }
            }
        }
        if bound_live {
            for value in live_values {
                operands(value, source, resolver, &mut live, 0);
            }
        }
    }
    found
}

/// The statements of a block in source order, compound statements' bodies included (`if`,
/// `with`, `try`, nested loops), definitions excluded.
pub(crate) fn collect_statements<'t>(block: Node<'t>, out: &mut Vec<Node<'t>>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for statement in block.named_nodes() {
        match statement.kind_key() {
            kind::EXPRESSION_STATEMENT => out.push(statement),
            kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::DECORATED_DEFINITION => {}
            kind::IF_STATEMENT
            | kind::FOR_STATEMENT
            | kind::WHILE_STATEMENT
            | kind::WITH_STATEMENT
            | kind::TRY_STATEMENT
            | kind::ELIF_CLAUSE
            | kind::ELSE_CLAUSE
            | kind::EXCEPT_CLAUSE
            | kind::FINALLY_CLAUSE
            | kind::BLOCK => collect_statements(statement, out, depth + 1),
            _ => {}
        }
    }
}

/// What a backward call differentiates: `loss` in `loss.backward()`, `(loss / k).backward()`,
/// `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `self.manual_backward(loss)`.
fn backward_operand<'t>(call: Node<'t>, source: &str) -> Option<Node<'t>> {
    let (receiver, method) = syntax::method_call(call)?;
    let (_, arguments) = syntax::call_parts(call)?;
    let positional = syntax::positional_args(arguments);
    match (node_text(method, source), positional.as_slice()) {
        ("backward", []) => {
            // `scaler.scale(loss)`: the scaled value is `loss` times a factor.
            if let Some((scaler, scale)) = syntax::method_call(receiver)
                && node_text(scale, source) == "scale"
                && node_text(scaler, source)
                    .to_ascii_lowercase()
                    .ends_with("scaler")
                && let Some((_, scale_arguments)) = syntax::call_parts(receiver)
                && let [loss] = syntax::positional_args(scale_arguments).as_slice()
            {
                return Some(*loss);
            }
            Some(receiver)
        }
        ("backward", [loss]) => {
            let owner = node_text(receiver, source);
            (owner.ends_with("accelerator") || owner.ends_with("fabric")).then_some(*loss)
        }
        ("manual_backward", [loss]) if node_text(receiver, source) == "self" => Some(*loss),
        _ => None,
    }
}

/// The names an assignment's target binds: `out`, `out, aux`, `(out, aux)`.
pub(crate) fn targets(left: Node<'_>) -> Vec<Node<'_>> {
    match left.kind_key() {
        kind::IDENTIFIER => vec![left],
        kind::PATTERN_LIST | kind::TUPLE_PATTERN | kind::LIST_PATTERN => left
            .named_nodes()
            .filter(|n| n.is(kind::IDENTIFIER))
            .collect(),
        _ => Vec::new(),
    }
}

/// The (name, value) pairs of a tuple assignment written element by element (`a, b = x, y`),
/// when both sides have the same number of elements and every target is a plain name.
pub(crate) fn paired_elements<'t>(
    left: Node<'t>,
    right: Node<'t>,
) -> Option<Vec<(Node<'t>, Node<'t>)>> {
    element_pairs(left, right)
        .filter(|pairs| pairs.iter().all(|(name, _)| name.is(kind::IDENTIFIER)))
}

/// The (target, value) pairs of a tuple assignment written element by element (`a, b = x, y`;
/// targets of any kind), when both sides have the same number of elements.
pub(crate) fn element_pairs<'t>(
    left: Node<'t>,
    right: Node<'t>,
) -> Option<Vec<(Node<'t>, Node<'t>)>> {
    (left.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN])
        && right.is_any(&[kind::EXPRESSION_LIST, kind::TUPLE])
        && left.named_child_count() == right.named_child_count())
    .then(|| left.named_nodes().zip(right.named_nodes()).collect())
}

/// Whether a value is computed by code (a call, an operation, a field or element of a value),
/// not written down (a literal, a container display, a bare name's alias).
fn binds_computed_value(value: Node<'_>) -> bool {
    matches!(
        syntax::unparenthesize(value).kind_name(),
        "call" | "binary_operator" | "attribute" | "subscript" | "unary_operator"
    )
}

/// Adds the names in tensor positions of `expr` to `live` (see the module docs).
fn operands<'s>(
    expr: Node<'_>,
    source: &'s str,
    resolver: &impl Resolver,
    live: &mut Vec<&'s str>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        kind::IDENTIFIER => {
            let name = node_text(expr, source);
            if name != "self" && !live.contains(&name) {
                live.push(name);
            }
        }
        kind::ATTRIBUTE => {
            // `outputs.loss`: a field of a model's output.
            if let Some(object) = expr.field("object") {
                operands(object, source, resolver, live, depth + 1);
            }
        }
        kind::SUBSCRIPT => {
            if let Some(value) = expr.field("value") {
                operands(value, source, resolver, live, depth + 1);
            }
        }
        kind::UNARY_OPERATOR => {
            if let Some(argument) = expr.field("argument") {
                operands(argument, source, resolver, live, depth + 1);
            }
        }
        kind::BINARY_OPERATOR => {
            let (Some(left), Some(right), Some(operator)) = (
                expr.field("left"),
                expr.field("right"),
                expr.field("operator"),
            ) else {
                return;
            };
            let additive = matches!(node_text(operator, source), "+" | "-");
            for side in [left, right] {
                if additive || syntax::unparenthesize(side).is_not(kind::IDENTIFIER) {
                    operands(side, source, resolver, live, depth + 1);
                }
            }
        }
        kind::CALL => {
            let Some((function, arguments)) = syntax::call_parts(expr) else {
                return;
            };
            let method_receiver = function
                .field("object")
                .filter(|_| function.is(kind::ATTRIBUTE))
                .filter(|object| node_text(*object, source) != "self")
                .filter(|_| resolver.resolve(function).is_none());
            match method_receiver {
                // `out.sum()`, `logits.view(-1, v)`: the receiver is the tensor.
                Some(receiver) => operands(receiver, source, resolver, live, depth + 1),
                // `criterion(out, y)`, `self.loss_fn(out, y)`, `F.mse_loss(out, y)`.
                None => {
                    for argument in syntax::positional_args(arguments) {
                        operands(argument, source, resolver, live, depth + 1);
                    }
                }
            }
        }
        _ => {}
    }
}

//! Whether a loop is a decode loop: one that grows a tensor onto itself from its own value, the
//! autoregressive shape `logits = model(idx[:, -n:])` … `idx = torch.cat((idx, next_token), 1)`.
//!
//! A tensor concatenated onto itself changes shape every iteration. Whether that costs a
//! compilation per iteration depends on whether each iteration runs the device; a loop that
//! never syncs or reads a value back may be traced whole, and a loop in `forward` over layers
//! (DenseNet's `x = torch.cat([x, layer(x)], 1)`) is one graph per call. A tensor whose appended
//! part is computed *from the tensor itself through a call* is different: the next iteration's
//! input is this iteration's output, so the loop is a generation loop that runs the model once
//! per step at a new length (eagerly on TorchTPU, and as an ever longer unrolled trace on
//! PyTorch/XLA), which is what static caches exist for; every tensor such a loop concatenates
//! onto itself (the attention mask beside the tokens) grows per generated step. The pre-pass
//! computes this for a loop whose own body calls `torch.cat` (not for every loop), from the
//! body's statements in order, and with it the names bound to the model's output
//! (`logits = model(idx_cond)`), which the index takes for device tensors when it knows nothing
//! else of them.

use crate::kind;
use tree_sitter::Node;

use crate::syntax::{self, NodeExt, node_text};
use crate::torch_api;

use super::backward_flow::{collect_statements, targets};
use super::summaries::Resolver;

/// How deep an expression is searched for names.
const MAX_DEPTH: usize = 12;

/// Whether `loop_node`'s body concatenates a tensor onto itself (`x = torch.cat([x, y], …)`, `x`
/// carried from the last iteration) where `y` is computed from `x` in the same iteration through
/// at least one call: a decode loop. When it is, the model's outputs: the names bound to the
/// first call the carried tensor goes through (`logits = model(idx_cond)`, with `idx_cond` a slice
/// of `idx`), each with its assignment's start relative to the loop's. That callee runs the model
/// on its own output every step; when the index knows nothing of it (a parameter `model`), its
/// result is the model's output.
pub(crate) fn decode_model_outputs(
    loop_node: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
) -> Option<Vec<(String, usize)>> {
    let body = loop_node.field("body")?;
    let mut statements = Vec::new();
    collect_statements(body, &mut statements, 0);
    // A callee that changes with the iteration (`for layer in self.layers: … layer(x)`,
    // `self.blocks[i](x)`) is a stack of layers applied in turn (DenseNet's
    // `x = torch.cat([x, layer(x)], 1)`), not one model run again on its own output.
    let mut loop_targets = Vec::new();
    if let Some(left) = loop_node.field("left") {
        identifiers(left, source, &mut loop_targets, 0);
    }
    let mut decodes = false;
    let mut outputs = Vec::new();
    for (position, statement) in statements.iter().enumerate() {
        let Some((name, appended)) = self_concatenation(*statement, source, resolver) else {
            continue;
        };
        let mut runs = Vec::new();
        if computed_from_through_call(
            &statements[..position],
            name,
            &appended,
            &loop_targets,
            source,
            resolver,
            &mut runs,
        ) {
            decodes = true;
            for (target, start) in runs {
                let Some(at) = start.checked_sub(loop_node.start_byte()) else {
                    continue;
                };
                if !outputs.iter().any(|(n, a)| n == target && *a == at) {
                    outputs.push((target.to_string(), at));
                }
            }
        }
    }
    decodes.then_some(outputs)
}

/// `logits = model(idx_cond)`, `out = self.lm(x).logits[:, -1]`: the call at the root of `value`
/// (through fields, subscripts and methods of its result), when its callee is a name or an
/// attribute of this file's code (no import: not a torch function) and no loop target.
fn model_run<'t>(
    value: Node<'t>,
    loop_targets: &[&str],
    source: &str,
    resolver: &impl Resolver,
) -> Option<Node<'t>> {
    let mut node = syntax::unparenthesize(value);
    for _ in 0..MAX_DEPTH {
        match node.kind_key() {
            kind::ATTRIBUTE => node = syntax::unparenthesize(node.field("object")?),
            kind::SUBSCRIPT => node = syntax::unparenthesize(node.field("value")?),
            kind::CALL => {
                let function = node.field("function")?;
                match function.kind_key() {
                    // A method of the result (`model(x).logits.float()`): the receiver.
                    kind::ATTRIBUTE
                        if function.field("object").is_some_and(|object| {
                            object.is_any(&[kind::CALL, kind::SUBSCRIPT])
                        }) =>
                    {
                        node = syntax::unparenthesize(function.field("object")?);
                    }
                    kind::IDENTIFIER | kind::ATTRIBUTE => {
                        let mut callee_names = Vec::new();
                        identifiers(function, source, &mut callee_names, 0);
                        let varies = callee_names.iter().any(|name| loop_targets.contains(name));
                        return (resolver.resolve(function).is_none() && !varies).then_some(node);
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    None
}

/// `x = torch.cat([x, a, b], …)`: `x` and the other parts (`a`, `b`).
fn self_concatenation<'t, 's>(
    statement: Node<'t>,
    source: &'s str,
    resolver: &impl Resolver,
) -> Option<(&'s str, Vec<Node<'t>>)> {
    let assignment = statement
        .named_child(0)
        .filter(|n| n.is(kind::ASSIGNMENT))?;
    let left = assignment
        .field("left")
        .filter(|l| l.is(kind::IDENTIFIER))?;
    let name = node_text(left, source);
    let call = syntax::unparenthesize(assignment.field("right")?);
    let (function, arguments) = syntax::call_parts(call)?;
    let qualified = resolver.resolve(function)?;
    if !matches!(
        qualified.as_str(),
        "torch.cat" | "torch.concat" | "torch.concatenate"
    ) {
        return None;
    }
    let tensors = syntax::unparenthesize(*syntax::positional_args(arguments).first()?);
    if !tensors.is_any(&[kind::LIST, kind::TUPLE]) {
        return None;
    }
    let mut itself = false;
    let mut others = Vec::new();
    for part in tensors.named_nodes() {
        if part.is(kind::IDENTIFIER) && node_text(part, source) == name {
            itself = true;
        } else {
            others.push(part);
        }
    }
    (itself && !others.is_empty()).then_some((name, others))
}

/// Whether one of `appended` is computed from `name` through a call, by the assignments of
/// `before` in order: a binding whose value mentions `name` (or a name derived from it) derives
/// from it, and from it through a call when the value calls something with a derived name in
/// its arguments or receiver, or mentions a name already derived through a call.
fn computed_from_through_call<'s>(
    before: &[Node<'_>],
    name: &'s str,
    appended: &[Node<'_>],
    loop_targets: &[&'s str],
    source: &'s str,
    resolver: &impl Resolver,
    runs: &mut Vec<(&'s str, usize)>,
) -> bool {
    // Rebound earlier in the iteration (`x = model(h)` … `x = torch.cat([pad, x])`): the value
    // concatenated is this iteration's, not one carried from the last.
    let rebound = before.iter().any(|statement| {
        statement
            .named_child(0)
            .filter(|n| n.is(kind::ASSIGNMENT) || n.is(kind::AUGMENTED_ASSIGNMENT))
            .and_then(|assignment| assignment.field("left"))
            .is_some_and(|left| {
                targets(left)
                    .iter()
                    .any(|target| node_text(*target, source) == name)
            })
    });
    if rebound {
        return false;
    }
    // (name, derived through a call)
    let mut derived: Vec<(&str, bool)> = vec![(name, false)];
    for statement in before {
        let Some(assignment) = statement
            .named_child(0)
            .filter(|n| n.is(kind::ASSIGNMENT) || n.is(kind::AUGMENTED_ASSIGNMENT))
        else {
            continue;
        };
        let (Some(left), Some(right)) = (assignment.field("left"), assignment.field("right"))
        else {
            continue;
        };
        let Some(through_call) = derivation(right, &derived, loop_targets, source) else {
            continue;
        };
        // The first run of the model on the carried tensor: a call whose arguments hold it
        // (or a slice of it), not yet anything computed from it by a call.
        let first_run = runs.is_empty()
            && model_run(right, loop_targets, source, resolver).is_some_and(|call| {
                call.field("arguments").is_some_and(|arguments| {
                    let uncalled: Vec<(&str, bool)> = derived
                        .iter()
                        .filter(|(_, through)| !through)
                        .copied()
                        .collect();
                    derivation(arguments, &uncalled, loop_targets, source).is_some()
                })
            });
        if first_run {
            for target in targets(left) {
                runs.push((node_text(target, source), assignment.start_byte()));
            }
        }
        for target in targets(left) {
            let target = node_text(target, source);
            if target == name {
                continue;
            }
            match derived.iter_mut().find(|(n, _)| *n == target) {
                Some(entry) => entry.1 |= through_call,
                None => derived.push((target, through_call)),
            }
        }
    }
    appended
        .iter()
        .any(|part| derivation(*part, &derived, loop_targets, source) == Some(true))
}

/// Whether `expr` mentions a derived name (`None` when it does not), and whether through a call:
/// a call with a derived name in its arguments or receiver, or a name derived through one.
fn derivation(
    expr: Node<'_>,
    derived: &[(&str, bool)],
    loop_targets: &[&str],
    source: &str,
) -> Option<bool> {
    let mut mentions = None;
    let names = Names {
        derived,
        loop_targets,
        source,
    };
    visit(expr, &names, false, &mut mentions, 0);
    mentions
}

/// What [`visit`] looks for.
struct Names<'a, 's> {
    derived: &'a [(&'s str, bool)],
    loop_targets: &'a [&'s str],
    source: &'s str,
}

fn visit(
    node: Node<'_>,
    names: &Names<'_, '_>,
    inside_call: bool,
    mentions: &mut Option<bool>,
    depth: usize,
) {
    if depth > MAX_DEPTH || *mentions == Some(true) {
        return;
    }
    let (derived, source) = (names.derived, names.source);
    match node.kind_key() {
        kind::IDENTIFIER => {
            let text = node_text(node, source);
            if let Some((_, through_call)) = derived.iter().find(|(n, _)| *n == text) {
                let through = *through_call || inside_call;
                *mentions = Some(mentions.unwrap_or(false) || through);
            }
        }
        // Nested scopes do not run here.
        kind::LAMBDA => {}
        // A shape read (`x.size(1)`, `x.shape[0]`, `len(x)`) says how long `x` is, not what it
        // holds.
        kind::CALL if reads_shape(node, source) => {}
        kind::ATTRIBUTE
            if node.field("attribute").is_some_and(|attribute| {
                torch_api::TENSOR_METADATA_ATTRIBUTES.contains(&node_text(attribute, source))
            }) => {}
        kind::CALL => {
            let mut callee_names = Vec::new();
            if let Some(function) = node.field("function") {
                identifiers(function, source, &mut callee_names, 0);
            }
            let counts = !callee_names
                .iter()
                .any(|name| names.loop_targets.contains(name));
            for child in node.named_nodes() {
                visit(child, names, inside_call || counts, mentions, depth + 1);
            }
        }
        _ => {
            for child in node.named_nodes() {
                visit(child, names, inside_call, mentions, depth + 1);
            }
        }
    }
}

/// A call whose result depends on its argument's shape only: `len(x)`, `torch.zeros_like(x)`,
/// `x.size(1)`, `x.new_ones(...)` ([`torch_api::LIKE_FACTORIES`],
/// [`torch_api::SHAPE_ONLY_METHODS`]).
fn reads_shape(call: Node<'_>, source: &str) -> bool {
    let Some((function, _)) = syntax::call_parts(call) else {
        return false;
    };
    match function.kind_key() {
        kind::IDENTIFIER => {
            let name = node_text(function, source);
            name == "len" || torch_api::LIKE_FACTORIES.contains(&name)
        }
        kind::ATTRIBUTE => function.field("attribute").is_some_and(|attribute| {
            let name = node_text(attribute, source);
            torch_api::LIKE_FACTORIES.contains(&name)
                || torch_api::SHAPE_ONLY_METHODS.contains(&name)
        }),
        _ => false,
    }
}

/// The identifiers in `node` (a loop's target, a callee expression).
fn identifiers<'s>(node: Node<'_>, source: &'s str, out: &mut Vec<&'s str>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if node.is(kind::IDENTIFIER) {
        out.push(node_text(node, source));
        return;
    }
    for child in node.named_nodes() {
        identifiers(child, source, out, depth + 1);
    }
}

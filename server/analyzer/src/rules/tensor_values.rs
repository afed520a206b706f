//! Stricter tensor predicates for the host-sync and dynamic-shape rules: which expressions are
//! tensors on solid evidence, which are boolean masks, and what a local name was last bound to.
//!
//! The index assumes every unannotated parameter of a hot function is a tensor, which is right
//! for `forward(self, x)` and wrong for `forward(self, x, return_dict)`. Rules that flag a
//! *value* (branches, `print`, formatting) would turn that guess into false positives, so they
//! ask [`is_confident_tensor`], which accepts a parameter only once tensor work was done on it.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::rules::helpers;
use crate::semantic::{Device, Evidence, ValueKind};
use crate::syntax::{self, NodeExt};
use crate::torch_api;

/// How deep the predicates below follow names and sub-expressions.
const MAX_DEPTH: usize = 6;

/// Whether `expr` is a device tensor on solid evidence: the index says tensor, the evidence is
/// more than "an unannotated parameter of a hot function", and it is not visibly on the host (a
/// CPU tensor's value is read without a device round trip and has no compiled shape).
pub fn is_confident_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    !helpers::is_on_host(context, expr) && confident(context, expr, 0)
}

fn confident<'t>(context: &Context<'t, '_>, expr: Node<'t>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let expr = syntax::unparenthesize(expr);
    let fact = context.fact(expr);
    // A CUDA tensor (`x.cuda()`, a model's output on one): the code that made it raises on a
    // TPU machine, and the finding there is the CUDA call's, not this read's.
    if !fact.is_tensor() || fact.device == Device::Cuda {
        return false;
    }
    match expr.kind_key() {
        kind::IDENTIFIER => {
            let Some(origin) = fact.origin_range() else {
                return false;
            };
            // What a training loop differentiates, or a hook receives as that value
            // (`on_train_batch_end`'s `outputs`): a tensor whatever its binding looks like.
            if fact.evidence == Evidence::FlowsIntoBackward {
                return true;
            }
            let Some(node) = context.semantic().origin_node((origin.start, origin.end)) else {
                return false;
            };
            if let Some(parameter) = enclosing_parameter(context, expr, origin.clone()) {
                // Every call of the function in the file passes a device tensor
                // (`self.loss_masks(out, num_boxes)` after `num_boxes = torch.ones(1,
                // device=device)`): the callers show what it holds, as a type would.
                if fact.evidence == Evidence::CallSite && fact.device == Device::Accelerator {
                    return true;
                }
                // The index only calls an annotated parameter a tensor when the annotation
                // names `Tensor`; `int | torch.Tensor` may still be a Python number.
                return parameter.is_any(&[kind::TYPED_PARAMETER, kind::TYPED_DEFAULT_PARAMETER])
                    && parameter
                        .field("type")
                        .is_some_and(|annotation| !admits_python_number(context.text(annotation)));
            }
            // `loss.backward()` / `accelerator.backward(loss)` made the name a tensor, or its
            // value flows into such a call (the index read the loop; re-judging the value with
            // today's bindings would lose that).
            if is_backward_operand(context, node) {
                return true;
            }
            // `left_off = self.left_off`: an alias of a buffer or parameter the module
            // registered, whose recorded origin is the registration call in `__init__`, which
            // itself is no tensor. `self.left_off` written out is confident (below).
            if is_member_registration(context, node) {
                return true;
            }
            // The expression the name was bound to, judged with today's bindings.
            node.byte_range() != expr.byte_range() && confident(context, node, depth + 1)
        }
        kind::CALL => {
            if let Some((receiver, method)) = context.method_call(expr) {
                let receiver_fact = context.fact(receiver);
                if receiver_fact.is_tensor() {
                    return confident(context, receiver, depth + 1)
                        || torch_api::TENSOR_ONLY_METHODS.contains(&context.text(method));
                }
            }
            true
        }
        kind::ATTRIBUTE => match expr.field("object") {
            Some(object) if context.fact(object).is_tensor() => {
                confident(context, object, depth + 1)
            }
            // `self.weight`, `module.bias`: attributes the index knows as tensors.
            _ => true,
        },
        kind::SUBSCRIPT => expr
            .field("value")
            .is_some_and(|value| confident(context, value, depth + 1)),
        kind::BINARY_OPERATOR | kind::COMPARISON_OPERATOR => {
            let operands: Vec<Node<'_>> = expr.named_nodes().collect();
            operands
                .into_iter()
                .any(|operand| confident(context, operand, depth + 1))
        }
        kind::UNARY_OPERATOR => expr
            .field("argument")
            .is_some_and(|argument| confident(context, argument, depth + 1)),
        _ => false,
    }
}

/// Whether an annotation such as `int | torch.Tensor` or `Union[float, Tensor]` also admits a
/// Python number or string.
fn admits_python_number(annotation: &str) -> bool {
    annotation
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| {
            matches!(
                word,
                "int" | "float" | "bool" | "str" | "Number" | "complex"
            )
        })
}

/// The parameter (of a function around `expr`) whose name lies at `origin`, if any.
fn enclosing_parameter<'t>(
    context: &Context<'t, '_>,
    expr: Node<'t>,
    origin: std::ops::Range<usize>,
) -> Option<Node<'t>> {
    let mut function = context.enclosing(expr, &["function_definition"]);
    for _ in 0..4 {
        let current = function?;
        if let Some(parameters) = current.field("parameters")
            && parameters.start_byte() <= origin.start
            && origin.end <= parameters.end_byte()
        {
            let found = parameters.named_nodes().find(|parameter| {
                parameter.start_byte() <= origin.start && origin.end <= parameter.end_byte()
            });
            return found;
        }
        function = context
            .parent(current)
            .and_then(|parent| context.enclosing(parent, &["function_definition"]));
    }
    None
}

/// Whether `expr` is a parameter that may be `None`: annotated `Optional[…]` / `… | None`, or
/// defaulting to `None`. `mask or default` on such a name is a `None` test in the writer's mind.
pub fn is_optional_parameter<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let expr = syntax::unparenthesize(expr);
    if expr.is_not(kind::IDENTIFIER) {
        return false;
    }
    let Some(origin) = context.fact(expr).origin_range() else {
        return false;
    };
    let Some(parameter) = enclosing_parameter(context, expr, origin) else {
        return false;
    };
    let annotation_admits_none = parameter.field("type").is_some_and(|annotation| {
        let text = context.text(annotation);
        text.contains("Optional") || text.contains("None")
    });
    let defaults_to_none = parameter
        .field("value")
        .is_some_and(|default| default.is(kind::NONE));
    annotation_admits_none || defaults_to_none
}

/// Whether `node` is evaluated only on an error path, at most once: inside a `raise` statement,
/// or in an `assert`'s message, which Python evaluates only when the assertion fails (the test
/// itself runs every time); or only on a throttle's steps: on the right of `step % n == 0 and …`,
/// which Python evaluates only when the modulo test holds.
pub fn in_error_or_throttled_path<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let mut child = node;
    let mut current = context.parent(node);
    while let Some(parent) = current {
        match parent.kind_key() {
            kind::RAISE_STATEMENT => return true,
            kind::BOOLEAN_OPERATOR
                if parent.field("right").is_some_and(|r| r.id() == child.id())
                    && parent
                        .field("operator")
                        .is_some_and(|o| context.text_is(o, "and"))
                    && parent
                        .field("left")
                        .is_some_and(|left| is_modulo_test(context, left)) =>
            {
                return true;
            }
            kind::ASSERT_STATEMENT => {
                return parent
                    .named_child(1)
                    .is_some_and(|message| message.id() == child.id());
            }
            kind::BLOCK | kind::FUNCTION_DEFINITION | kind::MODULE => return false,
            _ => {
                child = parent;
                current = context.parent(parent);
            }
        }
    }
    false
}

/// Whether `test` compares an `a % b` (a throttle such as `step % log_every == 0`).
pub fn is_modulo_test<'t>(context: &Context<'t, '_>, test: Node<'t>) -> bool {
    let test = syntax::unparenthesize(test);
    test.is(kind::COMPARISON_OPERATOR)
        && test.named_nodes().any(|operand| {
            let operand = syntax::unparenthesize(operand);
            operand.is(kind::BINARY_OPERATOR)
                && operand
                    .field("operator")
                    .is_some_and(|operator| context.text_is(operator, "%"))
                && operand
                    .field("left")
                    .is_some_and(|left| left.is_not(kind::STRING))
        })
}

/// Whether `node` is `x` in `x.backward()` or `loss` in `accelerator.backward(loss)` (read from
/// the text: `node` is usually far from the current node).
fn is_backward_operand<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let source = context.source();
    let after = source.get(node.end_byte()..).unwrap_or("");
    let before = source.get(..node.start_byte()).unwrap_or("");
    after.starts_with(".backward(") || before.trim_end().ends_with("backward(")
}

/// Whether `node` is `self.register_buffer(...)` or `self.register_parameter(...)`: the origin
/// the index records for a module's registered tensor.
fn is_member_registration<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    node.is(kind::CALL)
        && context.method_call(node).is_some_and(|(receiver, method)| {
            context.text_is(receiver, "self")
                && matches!(
                    context.text(method),
                    "register_buffer" | "register_parameter"
                )
        })
}

/// The comparison operators of a `comparison_operator` node (`<`, `is not`, `in`, ...).
pub fn comparison_operators<'s>(context: &Context<'s, '_>, comparison: Node<'_>) -> Vec<&'s str> {
    let mut operators = Vec::new();
    let mut cursor = comparison.walk();
    for child in comparison.children(&mut cursor) {
        if child.is_named() {
            continue;
        }
        let text = context.text(child);
        operators.push(if text.starts_with("not") {
            "not in"
        } else if text.starts_with("is") && text.contains("not") {
            "is not"
        } else {
            text
        });
    }
    operators
}

/// Whether a comparison compares values (`<`, `==`, ...) rather than identity or membership.
pub fn is_value_comparison<'t>(context: &Context<'t, '_>, comparison: Node<'t>) -> bool {
    let operators = comparison_operators(context, comparison);
    !operators.is_empty()
        && operators
            .iter()
            .all(|op| matches!(*op, "<" | ">" | "<=" | ">=" | "==" | "!=" | "<>"))
}

/// Whether any operand of a comparison is a string, `None` or a container literal: then it is
/// a Python-level comparison, whatever the index guessed about the other side.
fn compares_with_python_literal(comparison: Node<'_>) -> bool {
    comparison.named_nodes().any(|operand| {
        operand.is_any(&[
            kind::STRING,
            kind::CONCATENATED_STRING,
            kind::NONE,
            kind::LIST,
            kind::TUPLE,
            kind::DICTIONARY,
        ])
    })
}

/// Whether `expr` is a boolean tensor: a comparison of tensors, `~mask`, `m1 & m2`,
/// `torch.isnan(x)`, `x.eq(y)`, `t.bool()`, a bool factory, a rearranged view or element of one
/// (`m.transpose(0, 1)`, `m.view(-1)`, `m[:, 0]`), or a local name bound to one.
pub fn is_boolean_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    boolean(context, expr, 0)
}

fn boolean<'t>(context: &Context<'t, '_>, expr: Node<'t>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let expr = syntax::unparenthesize(expr);
    match expr.kind_key() {
        // A guessed parameter is enough here: the caller already knows the indexed value is a
        // tensor, and `x[x > 0]` compares that same kind of value.
        kind::COMPARISON_OPERATOR => {
            is_value_comparison(context, expr)
                && !compares_with_python_literal(expr)
                && context.fact(expr).is_tensor()
        }
        kind::UNARY_OPERATOR => {
            let is_invert = expr
                .field("operator")
                .is_some_and(|op| context.text_is(op, "~"));
            // `~` of a tensor is defined only for boolean and integer dtypes, and the integer
            // complement (`-(t + 1)`) is no index anyone writes: in an index (the only place this
            // is asked) `x[~keep]` complements a mask whatever `keep` is known to be. A Python
            // integer's complement (`x[~i]`, the `i`-th from the end) is no tensor and stays out.
            is_invert
                && expr.field("argument").is_some_and(|argument| {
                    boolean(context, argument, depth + 1) || context.fact(argument).is_tensor()
                })
        }
        kind::BINARY_OPERATOR => {
            let is_logical = expr
                .field("operator")
                .is_some_and(|op| matches!(context.text(op), "&" | "|" | "^"));
            is_logical && syntax::sides(expr).any(|side| boolean(context, side, depth + 1))
        }
        kind::CALL => boolean_call(context, expr, depth),
        // `m[:, 0]`, `m[idx]`: elements of a boolean tensor are booleans.
        kind::SUBSCRIPT => expr.field("value").is_some_and(|value| {
            context.fact(value).is_tensor() && boolean(context, value, depth + 1)
        }),
        kind::IDENTIFIER => {
            let name = context.text(expr);
            let assigned = last_assignment_value(context, name, expr).is_some_and(|value| {
                value.start_byte() != expr.start_byte() && boolean(context, value, depth + 1)
            });
            assigned || is_boolean_annotated_parameter(context, expr)
        }
        _ => false,
    }
}

/// Whether `expr` names a parameter annotated as a boolean tensor (`mask: torch.BoolTensor`,
/// `Optional[torch.BoolTensor] = None`), not rebound since.
fn is_boolean_annotated_parameter<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let Some(origin) = context.fact(expr).origin_range() else {
        return false;
    };
    enclosing_parameter(context, expr, origin).is_some_and(|parameter| {
        parameter.field("type").is_some_and(|annotation| {
            torch_api::is_boolean_tensor_annotation(context.text(annotation))
        })
    })
}

fn boolean_call<'t>(context: &Context<'t, '_>, call: Node<'t>, depth: usize) -> bool {
    let Some((function, arguments)) = context.call_parts(call) else {
        return false;
    };
    if let Some(qualified) = context.qualified_name(function) {
        if let Some(name) = qualified.strip_prefix("torch.")
            && torch_api::BOOLEAN_FUNCTIONS.contains(&name)
        {
            return true;
        }
        if let Some(name) = qualified.strip_prefix("torch.")
            && (torch_api::TENSOR_FACTORIES.contains(&name)
                || torch_api::LIKE_FACTORIES.contains(&name))
        {
            return context
                .keyword_arg(arguments, "dtype")
                .is_some_and(|dtype| context.text(dtype).ends_with("bool"));
        }
        return false;
    }
    let Some((receiver, method)) = context.method_call(call) else {
        return false;
    };
    if !context.fact(receiver).is_tensor() {
        return false;
    }
    let method = context.text(method);
    if torch_api::BOOLEAN_METHODS.contains(&method) {
        return true;
    }
    // `torch.isnan(y).any(-1)`, `m.all(dim=1)`: a reduction along a dimension is a boolean
    // tensor whatever the receiver's dtype (without one it is a single truth value).
    if matches!(method, "any" | "all")
        && (!syntax::positional_args(arguments).is_empty()
            || context.keyword_arg(arguments, "dim").is_some())
    {
        return true;
    }
    // `~m.transpose(0, 1)`, `m.view(-1)`: the receiver's booleanness carries through.
    if torch_api::DTYPE_PRESERVING_METHODS.contains(&method)
        || torch_api::DTYPE_KEEPING_UPDATE_METHODS.contains(&method)
    {
        return boolean(context, receiver, depth + 1);
    }
    if method == "to" {
        return syntax::positional_args(arguments)
            .first()
            .or(context.keyword_arg(arguments, "dtype").as_ref())
            .is_some_and(|dtype| context.text(*dtype).ends_with("bool"));
    }
    false
}

/// The right-hand side of the last plain assignment `name = <value>` before `at` in the same
/// function (or module) body, nested functions and classes excluded, from the index's record of
/// assignments. A cheap stand-in for a reaching definition: branches are not distinguished.
pub fn last_assignment_value<'t>(
    context: &Context<'t, '_>,
    name: &str,
    at: Node<'t>,
) -> Option<Node<'t>> {
    let semantic = context.semantic();
    let function = semantic.function_around(at)?;
    semantic.last_assignment_before(function, name, at.start_byte())
}

/// Whether the value is known not to be a tensor, or is a NumPy array.
pub fn is_known_non_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let fact = context.fact(expr);
    fact.is_not_tensor() || fact.kind == ValueKind::NumpyArray
}

/// Whether `call` is a method call named one of `names` on a value the index calls a tensor
/// (a guessed parameter counts: the method name itself is evidence).
pub fn tensor_method_call<'t>(
    context: &Context<'t, '_>,
    call: Node<'t>,
    names: &[&str],
) -> Option<(Node<'t>, &'t str)> {
    let (receiver, method) = context.method_call(call)?;
    let method = context.text(method);
    if !names.contains(&method) {
        return None;
    }
    if !context.fact(receiver).is_tensor() {
        return None;
    }
    Some((receiver, method))
}

/// The interpolated expressions of an f-string.
pub fn fstring_interpolations<'t>(string: Node<'t>) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    for child in string.named_nodes() {
        if child.is(kind::INTERPOLATION)
            && let Some(expression) = child.field("expression")
        {
            out.push(expression);
        }
    }
    out
}

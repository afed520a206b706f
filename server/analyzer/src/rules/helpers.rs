//! Predicates shared by rules: tensor-ness of receivers, torch call matching, literals, and
//! message fragments (edit builders live in `fix::edits`, imports in `fix::importer`).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::semantic::ValueKind;
use crate::syntax::{self, NodeExt, node_text};

/// Whether `expr` is a tensor for rules about methods that, on anything else, are rare:
/// a known tensor, or an unknown value in a file that imports torch. Known non-tensors
/// (NumPy arrays, scalars, containers, modules) never count.
pub fn is_probably_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let fact = context.fact(expr);
    match fact.kind {
        ValueKind::Tensor => true,
        ValueKind::Unknown => {
            context.semantic().imports_module("torch") && !looks_like_numpy(context, expr)
        }
        _ => false,
    }
}

/// `np.float32(x)`, `arr` bound from `np.array(...)`, `x.numpy()` and similar.
pub fn looks_like_numpy<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    if context.fact(expr).kind == ValueKind::NumpyArray {
        return true;
    }
    if expr.is(kind::CALL)
        && let Some(qualified) = context.semantic().call_qualified_name(expr)
    {
        return qualified.starts_with("numpy.");
    }
    false
}

/// The qualified name of a call's target when it is one of `names`.
pub fn call_matches<'a>(
    context: &Context<'_, '_>,
    call: Node<'_>,
    names: &[&'a str],
) -> Option<&'a str> {
    let qualified = context.semantic().call_qualified_name(call)?;
    names.iter().copied().find(|name| *name == qualified)
}

/// " in the training loop" / " in `forward`" — appended to messages on hot paths.
pub fn hot_path_suffix(context: &Context<'_, '_>) -> String {
    context
        .hot_path()
        .map(|hot| format!(" {}", hot.describe()))
        .unwrap_or_default()
}

/// Whether `node` is the condition of a `... if torch.cuda.is_available() else ...` choice.
pub fn in_cuda_availability_choice<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let Some(parent) = context.parent(node) else {
        return false;
    };
    if parent.is_not(kind::CONDITIONAL_EXPRESSION) {
        return false;
    }
    node_text(parent, context.source()).contains("cuda.is_available")
}

/// The call's argument list, when `node` is a call.
pub fn arguments<'t>(node: Node<'t>) -> Option<Node<'t>> {
    syntax::call_parts(node).map(|(_, arguments)| arguments)
}

/// The end of a host-sync message when the synced value only feeds a check that raises
/// (`SemanticModel::in_raising_check`): the cost is the same, the fix is not a device-side form
/// of the computation but moving the check out of the step.
pub fn raising_check_hint<'t>(context: &Context<'t, '_>, node: Node<'t>) -> &'static str {
    if context.semantic().in_raising_check(node) {
        ", only for a check that raises: drop the check or make it opt-in"
    } else {
        ""
    }
}

/// Source text for a message: its first line, at most 40 characters.
pub fn short_code(text: &str) -> String {
    let first_line = text.lines().next().unwrap_or("");
    if first_line.chars().count() > 40 || text.contains('\n') {
        let truncated: String = first_line.chars().take(37).collect();
        format!("{truncated}...")
    } else {
        first_line.to_string()
    }
}

/// What a call resolves to for rules about torch operators: `torch.median(x)`,
/// `F.grid_sample(...)` or a method on a value the index knows to be a tensor (`x.median()`).
#[derive(Debug, Clone)]
pub struct TorchCall<'t> {
    /// Qualified name; a tensor method `x.m(...)` is named `torch.m`.
    pub name: String,
    /// The tensor receiver of a method call.
    pub receiver: Option<Node<'t>>,
    pub arguments: Node<'t>,
}

impl<'t> TorchCall<'t> {
    /// The parameter at `position` of the function form (`torch.op(input, ...)`), or keyword
    /// `name`. For a method call the receiver takes position 0, so positions shift by one.
    pub fn argument(&self, position: usize, name: &str, source: &str) -> Option<Node<'t>> {
        if let Some(value) = syntax::keyword_arg(self.arguments, name, source) {
            return Some(value);
        }
        let positional = syntax::positional_args(self.arguments);
        if self.receiver.is_some() {
            position
                .checked_sub(1)
                .and_then(|index| positional.get(index).copied())
        } else {
            positional.get(position).copied()
        }
    }

    /// The tensor the op works on: the receiver of a method, else the first argument.
    pub fn input(&self, source: &str) -> Option<Node<'t>> {
        self.receiver.or_else(|| self.argument(0, "input", source))
    }
}

/// Resolves `call` to a torch function through the file's imports, or to a tensor method when
/// the receiver is known to be a tensor (unknown receivers are not guessed: `df.median()`,
/// `statistics.mode(...)` and `self.mode(...)` stay quiet).
pub fn torch_call<'t>(context: &Context<'t, '_>, call: Node<'t>) -> Option<TorchCall<'t>> {
    let (function, arguments) = context.call_parts(call)?;
    if let Some(name) = context.qualified_name(function) {
        return Some(TorchCall {
            name,
            receiver: None,
            arguments,
        });
    }
    let (receiver, method) = context.method_call(call)?;
    if !context.fact(receiver).is_tensor() {
        return None;
    }
    Some(TorchCall {
        name: format!("torch.{}", context.text(method)),
        receiver: Some(receiver),
        arguments,
    })
}

/// The value of a numeric literal such as `2`, `0.5`, `-1` or `(1.0)`.
pub fn literal_number(node: Node<'_>, source: &str) -> Option<f64> {
    let node = syntax::unparenthesize(node);
    match node.kind_key() {
        kind::INTEGER => syntax::integer_value(node, source).map(|v| v as f64),
        kind::FLOAT => crate::decimal::parse_f64(&node_text(node, source).replace('_', "")),
        kind::UNARY_OPERATOR => {
            let operand = node.field("argument")?;
            let value = literal_number(operand, source)?;
            match node_text(node, source).trim_start().chars().next()? {
                '-' => Some(-value),
                '+' => Some(value),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `True` / `False` literals.
pub fn literal_bool(node: Node<'_>) -> Option<bool> {
    match syntax::unparenthesize(node).kind_key() {
        kind::TRUE => Some(true),
        kind::FALSE => Some(false),
        _ => None,
    }
}

/// The numbers of an int literal or a tuple/list of literals: `2` → `[2]`, `(1, 2)` → `[1, 2]`.
/// `None` when any element is not a literal.
pub fn literal_numbers(node: Node<'_>, source: &str) -> Option<Vec<f64>> {
    let node = syntax::unparenthesize(node);
    match node.kind_key() {
        kind::TUPLE | kind::LIST => {
            let mut values = Vec::new();
            for child in node.named_nodes() {
                if child.is_not(kind::COMMENT) {
                    values.push(literal_number(child, source)?);
                }
            }
            Some(values)
        }
        _ => literal_number(node, source).map(|value| vec![value]),
    }
}

/// The torch dtype an expression names, canonicalised: `torch.double` → `"float64"`,
/// `torch.half` → `"float16"`. `None` for anything that is not `torch.<dtype>`.
pub fn torch_dtype<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> Option<&'static str> {
    let qualified = context.qualified_name(syntax::unparenthesize(expr))?;
    crate::torch_api::canonical_dtype(qualified.strip_prefix("torch.")?)
}

/// Whether `expr` is a tensor (as [`is_probably_tensor`]) that is not visibly on the host: reading
/// a host tensor's value (`.item()`, `float(t)`) costs no device round trip.
pub fn is_probably_device_tensor<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    is_probably_tensor(context, expr) && !is_on_host(context, expr)
}

/// Whether a saved value holds only host tensors: `x.cpu()`, a dict or list (comprehension) of
/// them, or a name last bound to one (`state = {k: v.cpu() for k, v in sd.items()}`).
pub fn holds_host_values<'t>(context: &Context<'t, '_>, value: Node<'t>) -> bool {
    host_values(context, value, 0)
}

fn host_values<'t>(context: &Context<'t, '_>, value: Node<'t>, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    let value = syntax::unparenthesize(value);
    if is_on_host(context, value) {
        return true;
    }
    match value.kind_key() {
        kind::IDENTIFIER => {
            crate::rules::tensor_values::last_assignment_value(context, context.text(value), value)
                .is_some_and(|bound| {
                    bound.start_byte() != value.start_byte()
                        && host_values(context, bound, depth + 1)
                })
        }
        kind::DICTIONARY_COMPREHENSION => value
            .field("body")
            .and_then(|pair| pair.field("value"))
            .is_some_and(|element| host_values(context, element, depth + 1)),
        kind::LIST_COMPREHENSION => value
            .field("body")
            .is_some_and(|element| host_values(context, element, depth + 1)),
        kind::DICTIONARY => {
            let pairs: Vec<Node<'t>> = value.named_nodes().collect();
            !pairs.is_empty()
                && pairs.iter().all(|pair| {
                    pair.field("value")
                        .is_some_and(|element| host_values(context, element, depth + 1))
                })
        }
        _ => false,
    }
}

/// Whether `expr` is visibly on the host: a tensor the index places on the CPU (a factory
/// without `device=`, `torch.from_numpy`), or an explicit `.cpu()` / `.to("cpu")`. An op on such
/// a value is not a TPU CPU fallback.
pub fn is_on_host<'t>(context: &Context<'t, '_>, expr: Node<'t>) -> bool {
    let expr = syntax::unparenthesize(expr);
    let fact = context.fact(expr);
    if fact.is_tensor() && fact.device == crate::semantic::Device::Cpu {
        return true;
    }
    let Some((_, method)) = context.method_call(expr) else {
        return false;
    };
    match context.text(method) {
        "cpu" => true,
        "to" => first_argument_is_cpu(context, expr),
        _ => false,
    }
}

fn first_argument_is_cpu<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((_, arguments)) = context.call_parts(call) else {
        return false;
    };
    syntax::argument(arguments, 0, "device", context.source())
        .and_then(|device| syntax::string_value(device, context.source()))
        .is_some_and(|device| device == "cpu")
}

/// Whether `node` sits in a branch chosen by a dtype test (`if dtype == torch.float16:`,
/// `x.half() if fp16 else x`, `if needs_upcasting:`): the dtype there follows the caller's
/// choice instead of hard-coding one. `markers` are lower-case words looked for in the test.
pub fn in_branch_testing<'t>(context: &Context<'t, '_>, node: Node<'t>, markers: &[&str]) -> bool {
    let mut current = context.parent(node);
    while let Some(ancestor) = current {
        let condition = match ancestor.kind_key() {
            kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::LAMBDA | kind::MODULE => {
                return false;
            }
            kind::IF_STATEMENT | kind::ELIF_CLAUSE | kind::WHILE_STATEMENT => {
                ancestor.field("condition")
            }
            kind::CONDITIONAL_EXPRESSION => ancestor.named_child(1),
            _ => None,
        };
        if let Some(condition) = condition
            && condition.id() != node.id()
        {
            let text = context.text(condition).to_ascii_lowercase();
            if markers.iter().any(|marker| text.contains(marker)) {
                return true;
            }
        }
        current = context.parent(ancestor);
    }
    false
}

/// The values a metric logger call records, when `call` is one: `writer.add_scalar(tag,
/// scalar_value, ...)`'s value, or the values of the dictionary literal given to `wandb.log`,
/// `accelerator.log`, `run.log`-style `x.log_metrics`. These loggers read each tensor value
/// (`.item()`), as printing it does.
pub fn metric_logger_values<'t>(
    context: &Context<'t, '_>,
    call: Node<'t>,
) -> Option<Vec<Node<'t>>> {
    let (function, arguments) = context.call_parts(call)?;
    let method = function
        .is(kind::ATTRIBUTE)
        .then(|| function.field("attribute"))
        .flatten()
        .map(|attribute| context.text(attribute))?;
    if method == "add_scalar" {
        return Some(
            syntax::argument(arguments, 1, "scalar_value", context.source())
                .into_iter()
                .collect(),
        );
    }
    let metrics_log = method == "log_metrics"
        || method == "log"
            && (context
                .qualified_name(function)
                .is_some_and(|name| name == "wandb.log")
                || function.field("object").is_some_and(|object| {
                    matches!(context.text(object), "accelerator" | "self.accelerator")
                }));
    if !metrics_log {
        return None;
    }
    let values = syntax::positional_args(arguments)
        .first()
        .filter(|metrics| metrics.is(kind::DICTIONARY))
        .map(|metrics| {
            metrics
                .named_nodes()
                .filter(|child| child.is(kind::PAIR))
                .filter_map(|pair| pair.field("value"))
                .collect()
        })
        .unwrap_or_default();
    Some(values)
}

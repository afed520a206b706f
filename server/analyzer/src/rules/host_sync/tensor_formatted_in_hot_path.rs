//! TPU104: a tensor formatted into a string or handed to a logger in a hot path.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::{helpers, tensor_values};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks, inside a hot path, for tensors formatted into text: f-string interpolations
    /// (`f"{loss}"`), `"...".format(loss)`, `"..." % loss`, and tensors passed as arguments to
    /// `logging` / `logger.*` calls or to metric loggers (`writer.add_scalar(tag, loss)`,
    /// `wandb.log({...})`, `accelerator.log({...})`). Outside hot paths, the same in a loop is
    /// reported as information (a script's loop over settings, a loop that computes on the
    /// device without a backward, an optimizer step or a sync).
    ///
    /// ## Why is this bad?
    /// Formatting a tensor reads its values: the host waits for the TPU to compute them and
    /// copies them back. PyTorch/XLA's advanced guide lists logging among the synchronous
    /// operations that block tracing, and its pitfall list singles out
    /// `logging.info(f"{loss}")`; TorchTPU counts it as a materialization (a graph break under
    /// `torch.compile`). `SummaryWriter.add_scalar` and `wandb.log` call `.item()` on tensors.
    ///
    /// ## Example
    /// ```python
    /// for step, batch in enumerate(loader):
    ///     loss = train_step(batch)
    ///     logger.info(f"step {step} loss {loss:.4f}")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, batch in enumerate(loader):
    ///     loss = train_step(batch)
    ///     if step % log_every == 0:
    ///         logger.info(f"step {step} loss {loss.item():.4f}")
    /// ```
    /// With PyTorch/XLA, `xm.add_step_closure(log_fn, args=(loss,))` logs after the step ran.
    ///
    /// ## Known problems
    /// f-strings passed straight to `print` are left to TPU103. A formatting call throttled by
    /// `if step % N == 0:` runs every N steps and is not reported. Values count as tensors only on solid evidence.
    /// Formatting that runs once (outside loops and hot paths, after a loop), per-epoch code (in
    /// a loop around a training or loader loop: a few syncs per run), and loops of
    /// library functions that no hot path of the file reaches (see `library-code`), are not
    /// reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *XLA advanced — Synchronous execution and blocking* (`docs/source/learn/xla-advanced.md`)
    /// - TorchTPU, *Deferred execution* notebook (printing and logging tensors materialize them)
    pub(crate) static TENSOR_FORMATTED_IN_HOT_PATH = {
        code: "TPU104",
        name: "tensor-formatted-in-hot-path",
        severity: Warning,
        fix: None,
        kinds: ["string", "call", "binary_operator"],
        check: check,
    }
}

const LOG_METHODS: WordList = word_list![
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "critical",
    "exception",
    "log",
];

/// TPU104
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    let Some((severity, place)) = context.repeated_host_read() else {
        return;
    };
    // An error message is built at most once.
    if tensor_values::in_error_or_throttled_path(context, node) {
        return;
    }
    let hot = Place { severity, place };
    match node.kind_key() {
        kind::STRING => check_fstring(context, node, hot),
        kind::CALL => check_call(context, node, hot),
        kind::BINARY_OPERATOR => check_percent(context, node, hot),
        _ => {}
    }
}

fn check_fstring<'t>(context: &mut Context<'t, '_>, string: Node<'t>, hot: Place) {
    if !is_fstring(context, string) || is_print_argument(context, string) {
        return;
    }
    let Some(tensor) = tensor_values::fstring_interpolations(string)
        .into_iter()
        .find(|expression| tensor_values::is_confident_tensor(context, *expression))
    else {
        return;
    };
    report(context, tensor, hot);
}

fn check_call<'t>(context: &mut Context<'t, '_>, call: Node<'t>, hot: Place) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let candidates: Vec<Node<'_>> = if is_logging_call(context, function) {
        // `logger.info("loss %s", loss)`: the format arguments after the message.
        syntax::positional_args(arguments)
            .into_iter()
            .skip(if callee_is(context, function, "log") {
                2
            } else {
                1
            })
            .collect()
    } else if callee_is(context, function, "format")
        && function
            .field("object")
            .is_some_and(|object| object.is(kind::STRING))
    {
        syntax::positional_args(arguments)
    } else if let Some(values) = helpers::metric_logger_values(context, call) {
        values
    } else {
        return;
    };
    if let Some(tensor) = candidates
        .into_iter()
        .find(|candidate| tensor_values::is_confident_tensor(context, *candidate))
    {
        report(context, tensor, hot);
    }
}

fn check_percent<'t>(context: &mut Context<'t, '_>, operator: Node<'t>, hot: Place) {
    let is_percent = operator
        .field("operator")
        .is_some_and(|op| context.text_is(op, "%"));
    let left_is_string = operator
        .field("left")
        .is_some_and(|left| left.is(kind::STRING));
    if !is_percent || !left_is_string {
        return;
    }
    let Some(right) = operator.field("right") else {
        return;
    };
    let right = syntax::unparenthesize(right);
    let values: Vec<Node<'_>> = if right.is(kind::TUPLE) {
        right.named_nodes().collect()
    } else {
        vec![right]
    };
    if let Some(tensor) = values
        .into_iter()
        .find(|value| tensor_values::is_confident_tensor(context, *value))
    {
        report(context, tensor, hot);
    }
}

/// Where the formatting repeats: the severity and the words for it.
#[derive(Clone, Copy)]
struct Place {
    severity: Severity,
    place: &'static str,
}

fn report<'t>(context: &mut Context<'t, '_>, tensor: Node<'t>, hot: Place) {
    let message = format!(
        "Formatting tensor `{}` {} waits for the device",
        helpers::short_code(context.text(tensor)),
        hot.place
    );
    context.report(tensor.byte_range(), message).severity = hot.severity;
}

fn is_fstring<'t>(context: &Context<'t, '_>, string: Node<'t>) -> bool {
    string
        .child(0)
        .is_some_and(|start| context.text(start).to_ascii_lowercase().contains('f'))
}

/// f-strings given straight to `print` are TPU103's.
fn is_print_argument<'t>(context: &Context<'t, '_>, string: Node<'t>) -> bool {
    context
        .parent(string)
        .filter(|parent| parent.is(kind::ARGUMENT_LIST))
        .and_then(|arguments| context.parent(arguments))
        .is_some_and(|call| super::print_tensor_in_hot_path::is_print_call(context, call))
}

fn callee_is<'t>(context: &Context<'t, '_>, function: Node<'t>, name: &str) -> bool {
    function.is(kind::ATTRIBUTE)
        && function
            .field("attribute")
            .is_some_and(|attribute| context.text(attribute) == name)
}

/// `logging.info(...)`, `logger.warning(...)`, `self.logger.info(...)`, `log.debug(...)`.
fn is_logging_call<'t>(context: &Context<'t, '_>, function: Node<'t>) -> bool {
    if function.is_not(kind::ATTRIBUTE) {
        return false;
    }
    let (Some(object), Some(method)) = (function.field("object"), function.field("attribute"))
    else {
        return false;
    };
    if !LOG_METHODS.contains(&context.text(method)) {
        return false;
    }
    if let Some(qualified) = context.qualified_name(function) {
        return qualified.starts_with("logging.");
    }
    let receiver = syntax::dotted_parts(object, context.source())
        .and_then(|parts| parts.last().copied())
        .unwrap_or("")
        .to_ascii_lowercase();
    receiver.contains("logger") || matches!(receiver.as_str(), "log" | "_log" | "logging")
}

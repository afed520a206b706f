//! TPU102: `.tolist()`, `.numpy()` or `.cpu()` on a tensor in a hot path.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;
use crate::semantic::Device;
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `.tolist()`, `.numpy()` and `.cpu()` on a tensor inside a hot path: a
    /// training loop, a step function, `forward`, or a compiled function.
    ///
    /// ## Why is this bad?
    /// Each of these copies the tensor's value to the host, so the host must wait for the TPU
    /// to finish computing it. PyTorch/XLA cuts and executes the pending graph early
    /// ("Data access/transfer" in its trace-vs-execution guide); TorchTPU lists `.tolist()`,
    /// `.numpy()` and `.cpu()` as materializations, each a graph break. Once per step, the
    /// device idles while the host copies and catches up.
    ///
    /// ## Example
    /// ```python
    /// for batch in loader:
    ///     logits = model(batch["x"])
    ///     predictions.extend(logits.argmax(-1).tolist())
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for batch in loader:
    ///     logits = model(batch["x"])
    ///     predictions.append(logits.argmax(-1))  # stays on the device
    /// predictions = torch.cat(predictions).tolist()  # one transfer after the loop
    /// ```
    ///
    /// ## Known problems
    /// Only receivers the index knows to be tensors are checked; a `.cpu()` on a tensor the index
    /// already places on the host is not reported. In a chain like `x.detach().cpu().numpy()` only
    /// the outermost call is reported. Outside hot paths, a copy that repeats with a loop of its
    /// function (or of module-level code) that is not an epoch loop and that no throttle guards
    /// is reported at information severity, and only on a receiver the index is sure is a device
    /// tensor; a copy that runs once (after training, per epoch) is not reported. In a loop that
    /// trains nothing (no backward, no optimizer step), a copy after the iteration's own
    /// `torch_xla.sync()` / `xm.mark_step()` is the inference loop's result being read once the
    /// graph has run (a server replying to its requests), and is not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *Trace vs. execution time — Data access/transfer* (`docs/source/learn/trace-vs-execution-time.md`)
    /// - TorchTPU, *Deferred execution* notebook: `.tolist()`, `.numpy()`, `.cpu()` are materializations
    pub(crate) static TENSOR_HOST_COPY_IN_HOT_PATH = {
        code: "TPU102",
        name: "tensor-host-copy-in-hot-path",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["tolist", "numpy", "cpu"],
        calls: HOST_COPY_METHODS,
        check: check,
    }
}

const HOST_COPY_METHODS: &[&str] = &["tolist", "numpy", "cpu"];

/// Methods that, called later in the same chain, make the outer call the one to report.
const READ_BACK_METHODS: &[&str] = &["tolist", "numpy", "item"];

/// TPU102
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    let method = context.text(method);
    if !HOST_COPY_METHODS.contains(&method) {
        return;
    }
    let Some((severity, place)) = context.repeated_host_read() else {
        return;
    };
    let on_hot_path = context.hot_path().is_some();
    if !context.fact(receiver).is_tensor() {
        return;
    }
    // In a plain loop (no hot path), only a tensor the index is sure of, as for the other host
    // reads there: the value under the chain's `.cpu()` / `.detach()` calls.
    if !on_hot_path && !tensor_values::is_confident_tensor(context, chain_base(context, receiver)) {
        return;
    }
    // `x.cpu().numpy()`, `x.cpu().detach().numpy()`: report the chain once, at its end.
    if is_continued_by_read_back(context, call)
        || tensor_values::in_error_or_throttled_path(context, call)
    {
        return;
    }
    if reads_results_after_barrier(context, call) {
        return;
    }
    // Copied from the host, or from a value not known to be a tensor (`out.argmax(-1).cpu()` on
    // an unknown `out`: the method makes the result a tensor, not the base a device tensor).
    if base_device(context, receiver).is_none_or(|device| device == Device::Cpu) {
        return;
    }
    let how_often = if on_hot_path {
        "every step"
    } else {
        "on every iteration"
    };
    let message = format!("`.{method}()` {place} copies a tensor to the host {how_often}");
    context.report(call.byte_range(), message).severity = severity;
}

/// Whether a later call of the same chain copies to the host again (`.cpu()` followed, maybe
/// after `.detach()` / `.clone()`, by `.numpy()`, `.tolist()` or `.item()`).
fn is_continued_by_read_back<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let mut current = call;
    for _ in 0..8 {
        let Some(attribute) = context
            .parent(current)
            .filter(|parent| parent.is(kind::ATTRIBUTE))
        else {
            return false;
        };
        let Some(method) = attribute.field("attribute") else {
            return false;
        };
        let name = context.text(method);
        if READ_BACK_METHODS.contains(&name) {
            // `x.numpy().tolist()` continues on a NumPy array: this call is the host copy.
            return context.fact(current).is_tensor();
        }
        if !matches!(name, "detach" | "clone" | "float" | "cpu" | "contiguous") {
            return false;
        }
        // Up from the attribute to the call it belongs to.
        let Some(next) = context
            .parent(attribute)
            .filter(|parent| parent.is(kind::CALL))
        else {
            return false;
        };
        current = next;
    }
    false
}

/// The device of the value under any `.cpu()` / `.detach()` calls: where the data was before
/// this chain started copying.
fn base_device<'t>(context: &Context<'t, '_>, receiver: Node<'t>) -> Option<Device> {
    let fact = context.fact(chain_base(context, receiver));
    fact.is_tensor().then_some(fact.device)
}

/// The expression under any `.cpu()` / `.detach()` calls of `receiver`'s chain.
fn chain_base<'t>(context: &Context<'t, '_>, receiver: Node<'t>) -> Node<'t> {
    let mut current = receiver;
    for _ in 0..syntax::MAX_EXPR_DEPTH {
        match context.method_call(current) {
            Some((inner, method)) if matches!(context.text(method), "cpu" | "detach") => {
                current = inner
            }
            _ => break,
        }
    }
    current
}

/// Barriers that cut and run the pending graph (see `summaries::SYNC_CALLS`).
const BARRIERS: &[&str] = &["torch_xla.sync", "torch_xla.core.xla_model.mark_step"];

/// Whether `call` reads, in an inference loop, what the loop computed after the iteration's own
/// barrier: an earlier top-level statement of the loop's body is `xm.mark_step()` /
/// `torch_xla.sync()`, and the loop runs no backward and no optimizer step.
fn reads_results_after_barrier<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some(loop_node) = context
        .enclosing(
            call,
            &["for_statement", "while_statement", "function_definition"],
        )
        .filter(|node| node.is_not(kind::FUNCTION_DEFINITION))
    else {
        return false;
    };
    let trains = context
        .semantic()
        .loop_summary(loop_node)
        .is_none_or(|summary| summary.calls_backward || summary.steps_optimizer);
    let Some(body) = loop_node.field("body") else {
        return false;
    };
    if trains {
        return false;
    }
    body.named_nodes()
        .take_while(|statement| statement.end_byte() <= call.start_byte())
        .any(|statement| {
            statement.is(kind::EXPRESSION_STATEMENT)
                && statement.named_child(0).is_some_and(|expr| {
                    context
                        .semantic()
                        .call_qualified_name(expr)
                        .is_some_and(|name| BARRIERS.contains(&name.as_str()))
                })
        })
}

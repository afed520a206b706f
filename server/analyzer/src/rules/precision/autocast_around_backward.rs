//! TPU507: `backward()` or the optimizer step inside an autocast region.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::semantic::ValueKind;
use crate::syntax::NodeExt;
use crate::syntax::{MAX_EXPR_DEPTH, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for `loss.backward()`, `optimizer.step()`, `scaler.step(optimizer)` and
    /// `xm.optimizer_step(optimizer)` written inside a `with torch.autocast(...)` block (or
    /// `torch.amp.autocast`, `torch.cuda.amp.autocast`, `torch_xla.amp.autocast`).
    ///
    /// ## Why is this bad?
    /// The AMP guides of PyTorch and PyTorch/XLA say that "autocast should wrap only the
    /// forward pass(es) and loss computation(s)"; backward ops already run in the dtype their
    /// forward ops chose. Under PyTorch/XLA the whole block is traced into the step's graph, so
    /// autocasting the backward and the optimizer update casts gradients and optimizer state
    /// (for example to bfloat16), which loses precision in the update and adds casts to the
    /// graph.
    ///
    /// ## Example
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     loss = criterion(model(x), y)
    /// loss.backward()
    /// optimizer.step()
    /// ```
    ///
    /// ## Known problems
    /// Autocast regions entered through other wrappers (`accelerator.autocast()`, custom
    /// context managers) are not recognised. Nested functions defined inside the block are not
    /// searched.
    ///
    /// ## References
    /// - PyTorch/XLA *AMP*, best practices (`docs/source/perf/amp.md`); PyTorch *Automatic Mixed
    ///   Precision* (`torch.autocast` docs)
    pub(crate) static AUTOCAST_AROUND_BACKWARD = {
        code: "TPU507",
        name: "autocast-around-backward",
        severity: Warning,
        fix: None,
        kinds: ["with_statement"],
        tokens: ["autocast"],
        check: check,
    }
}

const AUTOCAST_CONTEXTS: WordList = word_list![
    "torch.autocast",
    "torch.amp.autocast",
    "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast",
    "torch_xla.amp.autocast",
];

/// TPU507
fn check<'t>(context: &mut Context<'t, '_>, with: Node<'t>) {
    if !is_autocast_with(context, with) {
        return;
    }
    let Some(body) = with.field("body") else {
        return;
    };
    let mut found = Vec::new();
    collect_steps(context, body, 0, &mut found);
    for (range, what) in found {
        let message = format!(
            "`{what}` inside an autocast region: autocast should wrap only the forward pass and loss"
        );
        let severity = context.hot_path_severity();
        context.report(range, message).severity = severity;
    }
}

fn is_autocast_with<'t>(context: &Context<'t, '_>, with: Node<'t>) -> bool {
    let Some(clause) = with
        .named_child(0)
        .filter(|child| child.is(kind::WITH_CLAUSE))
    else {
        return false;
    };
    clause.named_nodes().any(|item| {
        let Some(value) = item.field("value") else {
            return false;
        };
        // `with autocast(...) as ac:` wraps the call in an `as_pattern`.
        let call = if value.is(kind::AS_PATTERN) {
            value.named_child(0)
        } else {
            Some(value)
        };
        call.filter(|c| c.is(kind::CALL))
            .and_then(|c| context.semantic().call_qualified_name(c))
            .is_some_and(|q| {
                AUTOCAST_CONTEXTS.contains(&q.as_str())
                    // `torch.autocast(..., enabled=False)` is not a region.
                    && !node_text(call.unwrap_or(value), context.source()).contains("enabled=False")
            })
    })
}

/// Backward and optimizer-step calls in `node`, not descending into nested definitions.
fn collect_steps(
    context: &Context<'_, '_>,
    node: Node<'_>,
    depth: usize,
    found: &mut Vec<(std::ops::Range<usize>, String)>,
) {
    if depth > MAX_EXPR_DEPTH * 4 {
        return;
    }
    if node.is_any(&[
        kind::FUNCTION_DEFINITION,
        kind::CLASS_DEFINITION,
        kind::LAMBDA,
    ]) {
        return;
    }
    if node.is(kind::CALL)
        && let Some(what) = step_call(context, node)
    {
        found.push((node.byte_range(), what));
    }
    for child in node.named_nodes() {
        collect_steps(context, child, depth + 1, found);
    }
}

/// `x.backward()`, `opt.step()` (an optimizer), `scaler.step(opt)`, `xm.optimizer_step(opt)`.
fn step_call<'t>(context: &Context<'t, '_>, call: Node<'t>) -> Option<String> {
    let source = context.source();
    if let Some(qualified) = context.semantic().call_qualified_name(call)
        && qualified == "torch_xla.core.xla_model.optimizer_step"
    {
        return Some("xm.optimizer_step(...)".to_string());
    }
    let (receiver, method) = context.method_call(call)?;
    let receiver_text = node_text(receiver, source);
    let short = |method: &str| {
        let receiver = if receiver_text.len() > 30 || receiver_text.contains('\n') {
            "..."
        } else {
            receiver_text
        };
        format!("{receiver}.{method}()")
    };
    match node_text(method, source) {
        "backward" => Some(short("backward")),
        "step" => {
            let last = receiver_text.rsplit('.').next().unwrap_or(receiver_text);
            let lower = last.to_ascii_lowercase();
            let optimizer = context.fact(receiver).kind == ValueKind::Optimizer
                || lower.contains("optim")
                || lower == "opt"
                || lower.contains("scaler");
            optimizer.then(|| short("step"))
        }
        _ => None,
    }
}

//! TPU605: a PyTorch/XLA training loop that never cuts the lazy graph.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Edit, Fix};
use crate::rules::tpu_api;
use crate::semantic::Backend;
use crate::source::detect_line_ending;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

declare_rule! {
    /// ## What it does
    /// Checks, in PyTorch/XLA files, for a loop that runs `loss.backward()` and an optimizer
    /// step but neither calls
    /// `torch_xla.sync()` / `xm.mark_step()` / `xm.optimizer_step()`, nor iterates an
    /// `MpDeviceLoader`, nor runs a `torch_xla.compile`d step.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA records operations into a lazy graph and executes it only at a barrier. Without
    /// one per step, the graph keeps growing across iterations ("a single graph that wraps the
    /// addition … times"): compile time and memory grow until the program stalls or runs out of
    /// memory, and nothing executes until a value is read. `MpDeviceLoader` and
    /// `xm.optimizer_step(..., barrier=True)` issue the barrier for you.
    ///
    /// ## Example
    /// ```python
    /// for data, target in loader:
    ///     optimizer.zero_grad()
    ///     loss = loss_fn(model(data), target)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for data, target in loader:
    ///     optimizer.zero_grad()
    ///     loss = loss_fn(model(data), target)
    ///     loss.backward()
    ///     optimizer.step()
    ///     torch_xla.sync()
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `torch_xla.sync()` to the loop body (and `import torch_xla`). It is unsafe:
    /// the barrier's position matters, and it is not offered when the body can `continue`,
    /// `break` or `return`.
    ///
    /// ## Known problems
    /// A loop that calls a helper which syncs is recognised only when the helper is defined in the
    /// same file (the index's function summaries, transitively). Files that use
    /// `MpDeviceLoader`, `ParallelLoader`, eager mode or `torch.compile` / `torch_xla.compile` are
    /// not checked, since the barrier may come from there, nor files that import `torch_xla` only
    /// conditionally. A `with torch_xla.step():` body counts as synced. Only calls count: a
    /// string or comment that mentions `torch_xla.sync()` does not, nor does `re.compile(...)`.
    ///
    /// ## References
    /// - PyTorch/XLA, *XLA advanced* (https://github.com/pytorch/xla/blob/master/docs/source/learn/xla-advanced.md): "Barriers", "Data Loading"
    /// - TorchTPU `docs/notebooks/eager_mode.py` (https://github.com/google-pytorch/torch_tpu): eager by default, so no sync is needed there
    pub(crate) static TRAINING_LOOP_WITHOUT_SYNC = {
        code: "TPU605",
        name: "training-loop-without-sync",
        severity: Warning,
        fix: Sometimes,
        kinds: ["for_statement", "while_statement"],
        check: check,
    }
}

/// TPU605
fn check<'t>(context: &mut Context<'t, '_>, loop_node: Node<'t>) {
    if context.backend() != Backend::TorchXla
        || !tpu_api::imports_unconditionally(context, "torch_xla")
    {
        return;
    }
    let source = context.source();
    let Some(body) = loop_node.field("body") else {
        return;
    };
    let semantic = context.semantic();
    let Some(summary) = semantic.loop_summary(loop_node) else {
        return;
    };
    // Gradient accumulation loops run several backward passes per step on purpose: the
    // barrier belongs to the loop that also steps the optimizer. A nested loop that calls
    // backward owns the step: report that one.
    if !summary.calls_backward || !summary.steps_optimizer || summary.nested_training_loop {
        return;
    }
    // A barrier in the body (`torch_xla.sync()`, `xm.mark_step()`, `xm.optimizer_step(...)`,
    // `with torch_xla.step():`), itself or in a function of this file it calls.
    if summary.syncs {
        return;
    }
    // A syncing loader, eager mode or compilation elsewhere in the file cuts the graph too.
    let file = semantic.file_facts();
    if file.uses_syncing_loader || file.eager_mode || file.compiles {
        return;
    }
    // A loader passed in may be an `MpDeviceLoader` built by the caller; not when the loop moves
    // each batch to the device itself in a file that builds no such loader.
    if iterates_parameter(context, loop_node)
        && !super::plain_loader_per_step_copy::moves_batches_of_plain_loader(context, loop_node)
    {
        return;
    }
    let exits = summary.exits;
    let header_end = body.start_byte();
    let header = loop_node.start_byte()..header_end;
    let header_text = node_text(loop_node, source)
        .lines()
        .next()
        .unwrap_or("")
        .trim_end()
        .trim_end_matches(':')
        .to_string();
    let diagnostic_range =
        loop_node.start_byte()..(loop_node.start_byte() + header_text.len()).min(header.end);
    let fix = if exits {
        None
    } else {
        let sync = tpu_api::torch_xla_expression(context, loop_node, "sync");
        let expression = sync.expression.clone();
        let mut edits = sync.edits();
        let last = body
            .named_nodes()
            .filter(|child| child.is_not(kind::COMMENT))
            .last();
        let first = body.named_child(0);
        match (first, last) {
            (Some(first), Some(last))
                if first.start_position().row != loop_node.start_position().row =>
            {
                let indent = syntax::line_indent(source, first.start_byte());
                let newline = detect_line_ending(source);
                edits.push(Edit::insert(
                    last.end_byte(),
                    format!("{newline}{indent}{expression}()"),
                ));
                Some(Fix::new(
                    crate::diagnostic::Applicability::Unsafe.min(sync.applicability),
                    format!("Call `{expression}()` at the end of each step"),
                    edits,
                ))
            }
            _ => None,
        }
    };
    context
        .report(
            diagnostic_range,
            "Training loop never calls `torch_xla.sync()`: the lazy graph grows every step",
        )
        .fix = fix;
}

/// `for batch in loader:` where `loader` is a parameter of the enclosing function: the caller may
/// pass an `MpDeviceLoader`, which syncs at every step.
fn iterates_parameter<'t>(context: &Context<'t, '_>, loop_node: Node<'t>) -> bool {
    let source = context.source();
    let Some(iterable) = loop_node.field("right") else {
        return false;
    };
    // `enumerate(loader)` / `tqdm(loader)`: look inside.
    let mut iterable = syntax::unparenthesize(iterable);
    if iterable.is(kind::CALL)
        && let Some((_, arguments)) = context.call_parts(iterable)
        && let Some(first) = syntax::positional_args(arguments).first()
    {
        iterable = *first;
    }
    let Some(parts) = syntax::dotted_parts(iterable, source) else {
        return false;
    };
    let Some(first) = parts.first() else {
        return false;
    };
    let mut current = context.parent(loop_node);
    while let Some(node) = current {
        if node.is(kind::FUNCTION_DEFINITION) {
            let Some(parameters) = node.field("parameters") else {
                return false;
            };
            return node_text(parameters, source)
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == *first && word != "self");
        }
        current = context.parent(node);
    }
    false
}

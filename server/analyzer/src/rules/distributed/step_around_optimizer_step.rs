//! TPU708: a second `optimizer.step()` or a `dist.barrier()` next to `xm.optimizer_step`.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Related, Severity};
use crate::rules::helpers;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks the block around `xm.optimizer_step(optimizer)` for
    /// - a call of `optimizer.step()` on the same optimizer;
    /// - a `torch.distributed.barrier()` call.
    ///
    /// ## Why is this bad?
    /// `xm.optimizer_step(optimizer)` is "all-reduce the gradients, then `optimizer.step()`,
    /// then (with `barrier=True`) `torch_xla.sync()`": a further `optimizer.step()` applies
    /// every update twice. And on PyTorch/XLA's `"xla"` process group,
    /// `torch.distributed.barrier()` is a no-op (`ProcessGroupXla.barrier` returns a completed
    /// work object without communicating), so code that relies on it to keep processes in step
    /// around the update is not synchronised at all; `xm.rendezvous(tag)` is the barrier that
    /// waits for every process.
    ///
    /// ## Example
    /// ```python
    /// loss.backward()
    /// xm.optimizer_step(optimizer)
    /// optimizer.step()
    /// dist.barrier()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss.backward()
    /// xm.optimizer_step(optimizer)
    /// xm.rendezvous("step")  # only if the processes must really meet here
    /// ```
    ///
    /// ## Fix safety
    /// No fix: which call is the intended one is the author's decision.
    ///
    /// ## Known problems
    /// Only statements in the same block as `xm.optimizer_step` are examined, and the
    /// optimizer is matched by its source text.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/core/xla_model.py
    ///   (`optimizer_step`: `reduce_gradients`, `optimizer.step()`, `torch_xla.sync()`)
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/distributed/xla_backend.py
    ///   (`ProcessGroupXla.barrier` returns `_ret_work([])`)
    pub(crate) static STEP_AROUND_OPTIMIZER_STEP = {
        code: "TPU708",
        name: "step-around-optimizer-step",
        severity: Error,
        fix: None,
        kinds: ["call"],
        tokens: ["optimizer_step"],
        calls: ["optimizer_step"],
        check: check,
    }
}

/// TPU708
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(context, call, &["torch_xla.core.xla_model.optimizer_step"]).is_none()
    {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let source = context.source();
    let optimizer = syntax::argument(arguments, 0, "optimizer", source)
        .map(|node| context.text(node).to_string());
    let Some(statement) = context
        .parent(call)
        .filter(|parent| parent.is(kind::EXPRESSION_STATEMENT))
    else {
        return;
    };
    let Some(block) = context.parent(statement) else {
        return;
    };
    let siblings: Vec<Node<'t>> = block
        .named_nodes()
        .filter(|sibling| sibling.id() != statement.id())
        .collect();
    let related = Related {
        range: function.byte_range(),
        message: "`xm.optimizer_step` here".to_string(),
    };
    for sibling in siblings {
        let Some(other) = sibling
            .named_child(0)
            .filter(|_| sibling.is(kind::EXPRESSION_STATEMENT))
            .filter(|expression| expression.is(kind::CALL))
        else {
            continue;
        };
        if let Some((receiver, method)) = context.method_call(other)
            && context.text_is(method, "step")
            && optimizer.as_deref() == Some(context.text(receiver))
            && context
                .call_parts(other)
                .is_some_and(|(_, arguments)| arguments.named_child_count() == 0)
        {
            let diagnostic = context.report(
                other.byte_range(),
                format!(
                    "`{}.step()` next to `xm.optimizer_step({0})`, which already steps it: every update is applied twice",
                    context.text(receiver)
                ),
            );
            diagnostic.related.push(related.clone());
            continue;
        }
        if context.semantic().call_qualified_name(other).as_deref()
            == Some("torch.distributed.barrier")
        {
            let diagnostic = context.report(
                other.byte_range(),
                "`torch.distributed.barrier()` is a no-op on the `xla` process group; use `xm.rendezvous(tag)`",
            );
            diagnostic.severity = Severity::Warning;
            diagnostic.related.push(related.clone());
        }
    }
}

//! TPU606: `optimizer.step()` in a multi-process PyTorch/XLA program without gradient all-reduce.

use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::rules::tpu_api;
use crate::semantic::{Backend, ValueKind};
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks, in PyTorch/XLA programs launched with `xmp.spawn` or `torch_xla.launch`, for
    /// `optimizer.step()` when nothing in the file reduces gradients across processes (no DDP, no
    /// FSDP, no ZeRO-1 `ZeroRedundancyOptimizer`, no SPMD, no `xm.reduce_gradients`, no
    /// `all_reduce`).
    ///
    /// ## Why is this bad?
    /// Each spawned process trains its own replica. `optimizer.step()` applies only the local
    /// gradients, so the replicas silently drift apart. `xm.optimizer_step(optimizer)` is
    /// "all_reduce_gradients + optimizer.step()", and with `barrier=True` also the step's
    /// `torch_xla.sync()`.
    ///
    /// ## Example
    /// ```python
    /// def _mp_fn(index):
    ///     ...
    ///     loss.backward()
    ///     optimizer.step()
    ///
    /// torch_xla.launch(_mp_fn)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def _mp_fn(index):
    ///     ...
    ///     loss.backward()
    ///     xm.optimizer_step(optimizer)
    ///
    /// torch_xla.launch(_mp_fn)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites `optimizer.step()` to `xm.optimizer_step(optimizer)` and adds the import.
    /// It is unsafe: the step now communicates across processes.
    ///
    /// ## Known problems
    /// Receivers are recognised as optimizers by construction (`torch.optim.*`) or by name
    /// (`optimizer`, `opt`, `optim`); schedulers and scalers are never reported. The file must
    /// import torch_xla unconditionally, at module level or in a function around the step (`def
    /// _mp_fn(index): import torch_xla`); files that import it only under an availability test
    /// are libraries and are not checked.
    ///
    /// ## References
    /// - PyTorch/XLA, *PyTorch on XLA devices* (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md):
    ///   `xm.optimizer_step` all-reduces the gradients, then steps
    /// - TorchTPU `docs/notebooks/distributed_training_101.py` (https://github.com/google-pytorch/torch_tpu): DDP and `optimizer.step()`
    pub(crate) static OPTIMIZER_STEP_WITHOUT_REDUCE = {
        code: "TPU606",
        name: "optimizer-step-without-reduce",
        severity: Warning,
        fix: Sometimes,
        kinds: ["call"],
        tokens: ["torch_xla"],
        calls: ["step"],
        check: check,
    }
}

/// Text showing that gradients are reduced some other way.
const REDUCERS: WordList = word_list![
    "DistributedDataParallel",
    "DDP(",
    "FullyShardedDataParallel",
    "FSDP",
    "use_spmd",
    "reduce_gradients",
    "all_reduce",
    "optimizer_step(",
    "Accelerator(",
    "ZeroRedundancyOptimizer",
];

/// TPU606
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((receiver, method)) = context.method_call(call) else {
        return;
    };
    if !context.text_is(method, "step")
        || (context.backend() != Backend::TorchXla
            || !(tpu_api::imports_unconditionally(context, "torch_xla")
                || context
                    .semantic()
                    .function_imports_unconditionally("torch_xla")))
    {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    if arguments.named_child_count() != 0 {
        return;
    }
    if !is_optimizer(context, receiver) {
        return;
    }
    // Whole-file questions through `source_mentions`: memoized, and re-asked by incremental
    // checking after an edit.
    let multi_process = context.source_mentions("xmp.spawn(")
        || context.source_mentions("xla_multiprocessing.spawn(")
        || context.source_mentions("torch_xla.launch(");
    if !multi_process || REDUCERS.iter().any(|r| context.source_mentions(r)) {
        return;
    }
    let receiver_text = context.text(receiver).to_string();
    let optimizer_step = tpu_api::xla_model_expression(context, call, "optimizer_step");
    let expression = optimizer_step.expression.clone();
    let mut edits = optimizer_step.edits();
    edits.push(Edit::replace(
        call.byte_range(),
        format!("{expression}({receiver_text})"),
    ));
    context
        .report(
            call.byte_range(),
            format!("`{receiver_text}.step()` in a multi-process XLA program skips the gradient all-reduce"),
        )
        .fix = Some(Fix::new(
        Applicability::Unsafe.min(optimizer_step.applicability),
        format!("Replace with `{expression}({receiver_text})`"),
        edits,
    ));
}

fn is_optimizer<'t>(context: &Context<'t, '_>, receiver: Node<'t>) -> bool {
    let fact = context.fact(receiver);
    if fact.kind == ValueKind::Optimizer {
        return true;
    }
    if fact.kind != ValueKind::Unknown {
        return false;
    }
    let Some(parts) = syntax::dotted_parts(receiver, context.source()) else {
        return false;
    };
    let last = parts
        .last()
        .map(|p| p.to_ascii_lowercase())
        .unwrap_or_default();
    matches!(last.as_str(), "optimizer" | "opt" | "optim" | "optimiser")
}

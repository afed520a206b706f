//! TPU607: a plain `DataLoader` whose batches are copied with `.to(device)` every step (PyTorch/XLA).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::device_placement::factory_then_move::is_device_expression;
use crate::rules::tpu_api;
use crate::semantic::{Backend, Device, ValueKind};
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

declare_rule! {
    /// ## What it does
    /// Checks, in PyTorch/XLA files, for a loop over a plain `DataLoader` whose body moves the
    /// batch to the device with `.to(device)`, itself or through a function or method of the
    /// same file that moves the batch it is passed (`loss = self.training_step(batch)`).
    ///
    /// ## Why is this bad?
    /// The `.to(device)` copy itself is asynchronous on PyTorch/XLA, but the step still starts
    /// only once the loader produced the batch on the host and its transfer was issued: loading
    /// and transfer do not overlap the previous step's device work. `pl.MpDeviceLoader(loader,
    /// device)` prefetches the next batches onto the device in background threads (the
    /// documented way to feed an XLA device) and also issues the per-step `torch_xla.sync()`.
    ///
    /// ## Example
    /// ```python
    /// for data, target in train_loader:
    ///     data, target = data.to(device), target.to(device)
    ///     ...
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla.distributed.parallel_loader as pl
    ///
    /// train_device_loader = pl.MpDeviceLoader(train_loader, device)
    /// for data, target in train_device_loader:
    ///     ...
    /// ```
    ///
    /// ## Known problems
    /// Only loops whose iterable is a `DataLoader` built in the same function (or in place: `for
    /// x, y in DataLoader(test_set, batch_size=64):`) or a name containing `loader` are checked. In files that mention `MpDeviceLoader` / `ParallelLoader`, a name
    /// alone is not enough: only a loader the index knows to be a plain `DataLoader` (built in the
    /// function, or passed one by every call of the function in the file) is checked.
    /// Only PyTorch/XLA code is checked: a file that imports `torch_xla` at module level,
    /// unconditionally, or a function of a script that imports it itself, also under the
    /// script's own flag (`if args.tpu: import torch_xla.core.xla_model as xm` in `main`). A
    /// library module's import under an availability test, a `try`, or any `if` in a function
    /// is not enough: its loops serve other devices as much.
    ///
    /// ## Fix safety
    /// No fix: wrapping the loader changes where batches live and when the step syncs.
    ///
    /// ## References
    /// - PyTorch/XLA, *Migration to XLA on TPUs* (https://github.com/pytorch/xla/blob/master/docs/source/learn/migration-to-xla-on-tpus.md) and
    ///   *PyTorch on XLA devices* (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md): `MpDeviceLoader` preloads
    ///   batches onto the device
    /// - https://github.com/pytorch/xla/blob/master/torch_xla/distributed/parallel_loader.py
    ///   (`ParallelLoader` worker threads and the per-device prefetch queue)
    /// - TorchTPU `docs/notebooks/get_started_tpu.py` (https://github.com/google-pytorch/torch_tpu): a plain `DataLoader` and `.to("tpu")`
    pub(crate) static PLAIN_LOADER_PER_STEP_COPY = {
        code: "TPU607",
        name: "plain-loader-per-step-copy",
        severity: Warning,
        fix: None,
        kinds: ["for_statement"],
        check: check,
    }
}

/// TPU607
fn check<'t>(context: &mut Context<'t, '_>, loop_node: Node<'t>) {
    // A script's function that imports torch_xla itself (under the user's `--tpu` flag) runs
    // its loops on the XLA device when the flag is set; a library module's guarded import does not
    // make its loops PyTorch/XLA code.
    if context.backend() != Backend::TorchXla
        || !(tpu_api::imports_unconditionally(context, "torch_xla")
            || context.semantic().script_function_imports("torch_xla"))
    {
        return;
    }
    let source = context.source();
    let (Some(target), Some(iterable), Some(body)) = (
        loop_node.field("left"),
        loop_node.field("right"),
        loop_node.field("body"),
    ) else {
        return;
    };
    let Some(loader) = loader_of(context, iterable) else {
        return;
    };
    // A file that wraps loaders in `MpDeviceLoader` may iterate one under any name: there, only
    // a loader the index knows to be a plain `DataLoader` (built in the function, or passed one
    // by every call of it) is checked, not one known by its name alone.
    if (context.source_mentions("MpDeviceLoader") || context.source_mentions("ParallelLoader"))
        && context.fact(loader).kind != ValueKind::DataLoader
    {
        return;
    }
    let names = target_names(target, source);
    if names.is_empty() || !moves_a_batch(context, body, &names) {
        return;
    }
    context.report(
        loader.byte_range(),
        format!(
            "Batches of `{}` are loaded and sent to the device inside the step; `pl.MpDeviceLoader` prefetches them",
            node_text(loader, source)
        ),
    );
}

/// Whether a loop moves the batches it iterates to the device itself, in a file that never
/// wraps a loader in `MpDeviceLoader` / `ParallelLoader`: whatever it iterates (a loader passed
/// in included), the loader is a plain one, and nothing prefetches or cuts the graph per batch.
pub(crate) fn moves_batches_of_plain_loader<'t>(
    context: &Context<'t, '_>,
    loop_node: Node<'t>,
) -> bool {
    if context.source_mentions("MpDeviceLoader") || context.source_mentions("ParallelLoader") {
        return false;
    }
    let (Some(target), Some(body)) = (loop_node.field("left"), loop_node.field("body")) else {
        return false;
    };
    let names = target_names(target, context.source());
    !names.is_empty() && moves_a_batch(context, body, &names)
}

/// The loader expression of `for … in loader` / `enumerate(loader)` / `tqdm(loader)` /
/// `DataLoader(...)`.
fn loader_of<'t>(context: &Context<'t, '_>, iterable: Node<'t>) -> Option<Node<'t>> {
    let source = context.source();
    let mut expr = syntax::unparenthesize(iterable);
    // `for x, y in DataLoader(test_set, batch_size=64):` builds the loader in place.
    if expr.is(kind::CALL) && context.fact(expr).kind == ValueKind::DataLoader {
        return (context.fact(expr).device != Device::Accelerator).then_some(expr);
    }
    if expr.is(kind::CALL) {
        let name = context.callee_name(expr)?;
        if !matches!(name, "enumerate" | "tqdm" | "iter") {
            return None;
        }
        let (_, arguments) = context.call_parts(expr)?;
        expr = *syntax::positional_args(arguments).first()?;
    }
    let fact = context.fact(expr);
    if fact.kind == ValueKind::DataLoader {
        return (fact.device != Device::Accelerator).then_some(expr);
    }
    if fact.kind != ValueKind::Unknown {
        return None;
    }
    let parts = syntax::dotted_parts(expr, source)?;
    let last = parts.last()?.to_ascii_lowercase();
    last.contains("loader").then_some(expr)
}

fn target_names<'s>(target: Node<'_>, source: &'s str) -> Vec<&'s str> {
    let mut names = Vec::new();
    for node in syntax::target_names(target, true) {
        names.push(node_text(node, source));
    }
    names
}

/// Whether the body calls `<name>.to(<device>)` (or `<name>[k].to(<device>)`) on a loop variable.
fn moves_a_batch<'s>(context: &Context<'_, 's>, body: Node<'_>, names: &[&'s str]) -> bool {
    let source = context.source();
    // Comprehensions over the batch move its parts: `[img.to(device) for img in images]`,
    // `{k: v.to(device) for k, v in batch.items()}`; their variables join the batch's names.
    let mut names: Vec<&str> = names.to_vec();
    let mut stack = vec![body];
    let mut visited = 0;
    while let Some(node) = stack.pop() {
        visited += 1;
        if visited > 5_000 {
            return false;
        }
        if node.is(kind::CALL)
            && let Some((receiver, method)) = context.method_call(node)
            && syntax::text_is(method, source, "to")
            && let Some((_, arguments)) = context.call_parts(node)
        {
            let mut base = receiver;
            while base.is(kind::SUBSCRIPT) {
                match base.field("value") {
                    Some(value) => base = value,
                    None => break,
                }
            }
            let device = context
                .keyword_arg(arguments, "device")
                .or_else(|| syntax::positional_args(arguments).first().copied());
            if base.is(kind::IDENTIFIER)
                && names.contains(&node_text(base, source))
                && device.is_some_and(|d| is_device_expression(context, d))
            {
                return true;
            }
        }
        // A function or method of this file that moves the batch it is passed
        // (`loss = self.training_step(batch)`), by its summary.
        if node.is(kind::CALL)
            && let Some((_, arguments)) = context.call_parts(node)
            && syntax::positional_args(arguments)
                .iter()
                .enumerate()
                .any(|(position, argument)| {
                    argument.is(kind::IDENTIFIER)
                        && names.contains(&node_text(*argument, source))
                        && context.semantic().call_moves_argument(node, position)
                })
        {
            return true;
        }
        if node.is_any(&[
            kind::FUNCTION_DEFINITION,
            kind::CLASS_DEFINITION,
            kind::FOR_STATEMENT,
            kind::WHILE_STATEMENT,
        ]) && node.id() != body.id()
        {
            continue;
        }
        if node.is(kind::FOR_IN_CLAUSE)
            && let (Some(left), Some(right)) = (node.field("left"), node.field("right"))
            && iterates_names(right, source, &names)
        {
            names.extend(target_names(left, source));
        }
        let children: Vec<Node<'_>> = node.named_nodes().collect();
        // The `for … in …` clauses first: they bind what the element expression moves.
        stack.extend(children.iter().filter(|c| c.is_not(kind::FOR_IN_CLAUSE)));
        stack.extend(children.iter().filter(|c| c.is(kind::FOR_IN_CLAUSE)));
    }
    false
}

/// Whether a comprehension iterates one of `names`, directly or through `.items()` /
/// `.values()` (`images`, `batch.items()`).
fn iterates_names(iterable: Node<'_>, source: &str, names: &[&str]) -> bool {
    crate::semantic::summaries::iterated_name(iterable, source)
        .is_some_and(|name| names.contains(&name))
}

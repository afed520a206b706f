//! TPU308: `pad_sequence` in a collate function or loop, padding each batch to its own length.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.utils.rnn.pad_sequence(...)` inside a collate function (a function
    /// whose name contains `collate`), a hot path, or a loop, and for a collate function (or a
    /// collator class's `__call__`) that sizes its batch by `max(len(x) for x in batch)`.
    ///
    /// ## Why is this bad?
    /// `pad_sequence` pads to the longest sequence it is given, so a per-batch call produces a
    /// different sequence length for almost every batch. On a TPU each new input shape compiles a
    /// new graph; PyTorch/XLA's recompilation notes list custom collate functions that pad to the
    /// batch maximum with `pad_sequence` as a classic source of recompilations.
    ///
    /// ## Example
    /// ```python
    /// def collate(batch):
    ///     ids = pad_sequence([b["ids"] for b in batch], batch_first=True)
    ///     return ids
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def collate(batch, max_len=128):
    ///     ids = torch.stack([F.pad(b["ids"], (0, max_len - len(b["ids"]))) for b in batch])
    ///     return ids
    /// ```
    /// or pad to a bucket (the next multiple of 64) to bound the number of shapes.
    ///
    /// ## Known problems
    /// A `pad_sequence` whose output is padded again to a fixed length afterwards is still
    /// reported. Calls outside collate functions, loops and hot paths are not reported.
    ///
    /// ## References
    /// - PyTorch/XLA, *Source of recompilations* §1 (`docs/source/notes/source_of_recompilation.md`)
    /// - PyTorch/XLA issue #1509 (bucketing advice)
    /// - Hugging Face Accelerate, *TPU best practices* ("no dynamic padding")
    pub(crate) static PAD_SEQUENCE_PER_BATCH = {
        code: "TPU308",
        name: "pad-sequence-per-batch",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["pad_sequence", "max"],
        calls: ["pad_sequence", "max"],
        check: check,
    }
}

/// TPU308
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let is_pad_sequence = context
        .semantic()
        .call_qualified_name(call)
        .is_some_and(|name| name == "torch.nn.utils.rnn.pad_sequence");
    if !is_pad_sequence {
        // `max_len = max(len(x["input_ids"]) for x in batch)` in a collator: the same padding
        // to the batch's longest sequence, written by hand.
        if batch_maximum_length(context, call) && in_collator(context) {
            context.report(
                call.byte_range(),
                "Padding to `max(len(...))` of each batch pads to its longest sequence: a recompilation per length",
            );
        }
        return;
    }
    let in_collate = context
        .semantic()
        .function()
        .is_some_and(|function| function.name.to_ascii_lowercase().contains("collate"));
    if !in_collate && context.hot_path().is_none() && !context.semantic().in_loop() {
        return;
    }
    context.report(
        call.byte_range(),
        "`pad_sequence` per batch pads to each batch's longest sequence: a recompilation per length",
    );
}

/// `max(len(x) for x in xs)`, `max([len(x) for x in xs])`, `max(map(len, xs))`.
fn batch_maximum_length<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let Some((function, arguments)) = context.call_parts(call) else {
        return false;
    };
    if function.kind_name() != "identifier" || context.text(function) != "max" {
        return false;
    }
    let iterable = match arguments.kind_name() {
        // `max(len(x) for x in xs)`: the generator is the argument list itself.
        "generator_expression" => Some(arguments),
        _ => match syntax::positional_args(arguments).as_slice() {
            [only] => Some(*only),
            _ => None,
        },
    };
    let Some(iterable) = iterable.map(syntax::unparenthesize) else {
        return false;
    };
    let is_len = |node: Option<Node<'t>>| {
        node.and_then(|n| context.call_parts(syntax::unparenthesize(n)))
            .is_some_and(|(f, _)| f.kind_name() == "identifier" && context.text(f) == "len")
    };
    match iterable.kind_name() {
        "generator_expression" | "list_comprehension" => is_len(iterable.field("body")),
        "call" => context.call_parts(iterable).is_some_and(|(f, a)| {
            context.text(f) == "map"
                && syntax::positional_args(a)
                    .first()
                    .is_some_and(|first| context.text(*first) == "len")
        }),
        _ => false,
    }
}

/// Whether the current code is a collate function: a function whose name contains `collate`, or
/// `__call__` of a class whose name contains `Collat` (`DataCollatorWithPadding`).
fn in_collator(context: &Context<'_, '_>) -> bool {
    let Some(function) = context.semantic().function() else {
        return false;
    };
    if function.name.to_ascii_lowercase().contains("collate") {
        return true;
    }
    function.name == "__call__"
        && context
            .semantic()
            .enclosing_class_name()
            .is_some_and(|class| class.to_ascii_lowercase().contains("collat"))
}

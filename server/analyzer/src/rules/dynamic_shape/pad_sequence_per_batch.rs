//! TPU308: `pad_sequence` in a collate function or loop, padding each batch to its own length.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.utils.rnn.pad_sequence(...)` inside a collate function (a function
    /// whose name contains `collate`), a hot path, or a loop.
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
        tokens: ["pad_sequence"],
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

//! TPU305: `repeat_interleave` with tensor `repeats` and no `output_size=`.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::tensor_values;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.repeat_interleave(x, repeats)` and `x.repeat_interleave(repeats)` where
    /// `repeats` is a tensor and no `output_size=` is given.
    ///
    /// ## Why is this bad?
    /// The output length is `repeats.sum()`, a value on the device. PyTorch's documentation says
    /// passing `output_size` "will avoid stream synchronization needed to calculate output
    /// shape"; without it the host waits for the sum. PyTorch/XLA has no lowering for the
    /// tensor-repeats form, and TorchTPU lists `repeat_interleave.Tensor` among the operations
    /// that read their size back to the host and compile per distinct size.
    ///
    /// ## Example
    /// ```python
    /// token_batch = torch.repeat_interleave(batch_ids, lengths)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// token_batch = torch.repeat_interleave(batch_ids, lengths, output_size=max_tokens)
    /// ```
    /// where `max_tokens` is a static bound (pad `lengths` so they sum to it). With an `int`
    /// `repeats` (or `x.repeat(...)` / `expand` patterns) the op lowers entirely.
    ///
    /// ## Known problems
    /// Measured on torch_xla 2.9.0: with tensor `repeats` the op runs
    /// `aten::repeat_interleave.Tensor` on the CPU whether or not `output_size=` is given;
    /// `output_size` makes the shape static and removes the size read, but not the host round
    /// trip of the op itself (`scripts/measure-fallbacks.py`, cases `repeat_interleave.*`). This
    /// rule reports only the missing `output_size`.
    /// No fix is offered: the right `output_size` is a property of the data that only the author
    /// knows. `repeats` counts as a tensor only on solid evidence, so `x.repeat_interleave(n, 1)`
    /// with a Python int is never reported.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json`
    /// - PyTorch documentation, `torch.repeat_interleave` (`output_size` avoids a synchronization)
    /// - PyTorch/XLA, `codegen/xla_native_functions.yaml` (no `repeat_interleave.Tensor`)
    /// - TorchTPU, host round-trip ops (`repeat_interleave.Tensor`)
    pub(crate) static REPEAT_INTERLEAVE_WITHOUT_OUTPUT_SIZE = {
        code: "TPU305",
        name: "repeat-interleave-without-output-size",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["repeat_interleave"],
        calls: ["repeat_interleave"],
        check: check,
    }
}

/// TPU305
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let is_function = match context.semantic().call_qualified_name(call) {
        Some(name) if name == "torch.repeat_interleave" => true,
        Some(_) => return,
        None => {
            if tensor_values::tensor_method_call(context, call, &["repeat_interleave"]).is_none() {
                return;
            }
            false
        }
    };
    if !super::repeats_need_sync(context, arguments, is_function) {
        return;
    }
    let severity = context.hot_path_severity();
    context
        .report(
            call.byte_range(),
            "`repeat_interleave` with tensor `repeats` and no `output_size=` waits for the device to size its output",
        )
        .severity = severity;
}

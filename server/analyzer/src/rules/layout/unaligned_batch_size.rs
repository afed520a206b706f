//! TPU802: `DataLoader(batch_size=...)` literals that are not multiples of 8.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks, in files that target a TPU backend, `DataLoader(..., batch_size=N)` for an integer
    /// literal `N` greater than 1 that is not a multiple of 8. Off by default.
    ///
    /// ## Why is this bad?
    /// XLA lays tensors out in 8×128 tiles; in 2-D activations (`[batch, features]`) the batch is
    /// on the 8-wide axis. A batch of 12 is then padded to 16 (a quarter of the work wasted), a
    /// batch of 4 to 8 (half). Google's TPU
    /// performance guide asks for a batch size evenly divisible by 8 (per core), or by 128 for
    /// the best MXU use.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(dataset, batch_size=100, shuffle=True, drop_last=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(dataset, batch_size=128, shuffle=True, drop_last=True)
    /// ```
    ///
    /// ## Known problems
    /// Only literals passed to a `DataLoader` are checked, and only in files whose backend is known
    /// (configured, or visible from their imports). When the batch is not the second-to-last axis
    /// of the large tensors (e.g. `[batch, seq, hidden]`), padding falls on another axis instead.
    ///
    /// ## References
    /// - Google Cloud TPU performance guide ("batch size evenly divisible by 8 or 128"):
    ///   https://cloud.google.com/tpu/docs/performance-guide
    /// - TorchTPU `docs/notebooks/performance_profiling.py` (https://github.com/google-pytorch/torch_tpu): dimensions not aligned to tiles
    pub(crate) static UNALIGNED_BATCH_SIZE = {
        code: "TPU802",
        name: "unaligned-batch-size",
        severity: Info,
        fix: None,
        kinds: ["call"],
        tokens: ["DataLoader"],
        calls: ["DataLoader"],
        check: check,
        enabled_by_default: false,
    }
}

/// TPU802
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    let Some(callee) = context.callee_name(call) else {
        return;
    };
    if callee != "DataLoader" {
        return;
    }
    // Batch padding matters where the batches reach a TPU; generic and test code often picks tiny
    // batches for CPU runs.
    if context.backend() == crate::semantic::Backend::Unknown {
        return;
    }
    let is_torch_loader = context
        .semantic()
        .call_qualified_name(call)
        .is_none_or(|q| q.starts_with("torch.utils.data"));
    if !is_torch_loader {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let Some(value_node) = syntax::argument(arguments, 1, "batch_size", source) else {
        return;
    };
    let Some(value) = syntax::integer_value(value_node, source) else {
        return;
    };
    if value <= 1 || value % 8 == 0 {
        return;
    }
    let padded = (value + 7) / 8 * 8;
    context.report(
        value_node.byte_range(),
        format!("Batch size {value} is not a multiple of 8; TPU tiles round it up to {padded}"),
    );
}

//! TPU301: `nonzero`, `argwhere` and one-argument `torch.where`, whose output shape depends on data.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::{helpers, tensor_values};
use crate::syntax;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nonzero(x)`, `x.nonzero()`, `torch.argwhere(x)`, `x.argwhere()` and
    /// one-argument `torch.where(condition)` on tensors.
    ///
    /// ## Why is this bad?
    /// The number of rows these return depends on the tensor's values, so the output shape is
    /// unknown until the input is computed. XLA compiles static shapes: PyTorch/XLA falls back to
    /// the CPU for `nonzero` (it shows as an `aten::nonzero` counter) unless the experimental
    /// bounded-dynamic path is enabled, and every distinct count can compile a new graph.
    /// TorchTPU reads the size back to the host (`.cpu().item()`) and compiles per distinct
    /// size. One-argument `torch.where(c)` is documented as identical to
    /// `torch.nonzero(c, as_tuple=True)`.
    ///
    /// ## Example
    /// ```python
    /// idx = torch.nonzero(scores > threshold).squeeze(1)
    /// kept = boxes[idx]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// keep = scores > threshold                     # fixed-shape mask
    /// kept = torch.where(keep[:, None], boxes, 0)   # or topk with a fixed k
    /// ```
    ///
    /// ## Known problems
    /// Outside hot paths the finding is informational: a `nonzero` in data preparation runs on
    /// host tensors and costs nothing on the TPU. Method calls are reported only on values the
    /// index believes are tensors, so NumPy's `arr.nonzero()` stays quiet.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting* (`aten::nonzero` counter) and `torch_xla/csrc/aten_xla_type.cpp` (nonzero fallback)
    /// - PyTorch/XLA, *Dynamic shape* (`docs/source/learn/dynamic_shape.md`) and *Source of recompilations* §2
    /// - PyTorch documentation, `torch.where`: `torch.where(condition)` is `torch.nonzero(condition, as_tuple=True)`
    /// - TorchTPU, host round-trip ops (`nonzero` learns its output size on the host)
    pub(crate) static NONZERO_DYNAMIC_SHAPE = {
        code: "TPU301",
        name: "nonzero-dynamic-shape",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["nonzero", "argwhere", "where"],
        calls: ["nonzero", "argwhere", "where"],
        check: check,
    }
}

/// TPU301
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    let operation = if let Some(qualified) = context.qualified_name(function) {
        match qualified.as_str() {
            "torch.nonzero" => "torch.nonzero",
            "torch.argwhere" => "torch.argwhere",
            "torch.where" if super::is_one_argument_where(context, arguments) => {
                "one-argument torch.where"
            }
            _ => return,
        }
    } else {
        match tensor_values::tensor_method_call(context, call, &["nonzero", "argwhere"]) {
            Some((_, "nonzero")) => ".nonzero()",
            Some(_) => ".argwhere()",
            None => return,
        }
    };
    // On a host tensor (`torch.nonzero(t.cpu())`, `x.cpu().nonzero()`) the shape is known to the
    // host with no device round trip.
    let operand = match context.method_call(call) {
        Some((receiver, _)) if context.qualified_name(function).is_none() => Some(receiver),
        _ => syntax::positional_args(arguments).first().copied(),
    };
    if operand.is_some_and(|operand| helpers::is_on_host(context, operand)) {
        return;
    }
    let severity = context.hot_path_severity();
    let message = format!(
        "`{operation}` returns a data-dependent shape: a host sync or CPU fallback, and a recompilation per size"
    );
    context.report(call.byte_range(), message).severity = severity;
}

//! TPU205: medians and modes, which have no XLA lowering (quantiles do lower).

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.median`, `torch.nanmedian` and `torch.mode`, as functions or as methods
    /// of a tensor.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA has no lowering for these order statistics: measured on torch_xla 2.9.0,
    /// `median` (with and without `dim`), `nanmedian` and `mode` run through the CPU fallback
    /// (`aten::median.dim_values`, `aten::nanmedian`, `aten::mode`). Each call copies the tensor
    /// to the host, computes on the CPU and copies the result back, cutting the step's graph.
    ///
    /// `torch.quantile` and `torch.nanquantile` are **not** reported: the same measurement found
    /// them lowered (no fallback op, forward or backward), although PyTorch/XLA's autocast policy
    /// lists `quantile` as not lowered.
    ///
    /// ## Example
    /// ```python
    /// threshold = scores.median(dim=-1).values
    /// ```
    ///
    /// Use instead: `torch.kthvalue`, which lowers.
    /// ```python
    /// k = (scores.shape[-1] + 1) // 2
    /// threshold = scores.kthvalue(k, dim=-1).values  # same lower median as torch.median
    /// ```
    ///
    /// ## Known problems
    /// Methods are reported only when the receiver is known to be a tensor, so that
    /// `df.median()` (pandas) or `statistics.mode(...)` stay quiet; NumPy's `np.median` is never
    /// reported. TorchTPU: no public CPU build to measure; its documentation does not list these
    /// ops among its host round trips, so the finding speaks of PyTorch/XLA.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json`
    ///   (cases `median.*`, `nanmedian.*`, `mode.dim`, `quantile.*`; torch 2.9.0, torch_xla 2.9.0),
    ///   produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `codegen/xla_native_functions.yaml` (no `median`, `nanmedian`, `mode`;
    ///   `kthvalue` is lowered)
    pub(crate) static SORT_STATISTIC = {
        code: "TPU205",
        name: "median-or-mode",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["median", "nanmedian", "mode"],
        calls: ["median", "nanmedian", "mode"],
        check: check,
    }
}

/// TPU205
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if !context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "median" | "nanmedian" | "mode"))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let advice = match target.name.as_str() {
        "torch.median" | "torch.nanmedian" => "use `kthvalue((n + 1) // 2)`",
        "torch.mode" => "count with `one_hot(...).sum()` and take `argmax`",
        _ => return,
    };
    super::report_unlowered_call(context, call, &target, Some(advice));
}

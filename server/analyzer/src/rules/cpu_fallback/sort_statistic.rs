//! TPU205: quantiles, medians and modes, which have no XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.quantile`, `torch.nanquantile`, `torch.median`, `torch.nanmedian` and
    /// `torch.mode`, as functions or as methods of a tensor.
    ///
    /// ## Why is this bad?
    /// None of these order statistics is lowered by PyTorch/XLA: its autocast policy lists
    /// `quantile` / `nanquantile` as "not lowered", and `median`, `nanmedian` and `mode` are
    /// absent from its op table. Each call copies the tensor to the host, computes on the CPU
    /// and copies the result back, cutting the step's graph.
    ///
    /// ## Example
    /// ```python
    /// threshold = scores.median(dim=-1).values
    /// q = torch.quantile(errors, 0.9)
    /// ```
    ///
    /// Use instead: `torch.kthvalue` and `torch.sort` / `torch.topk`, which lower.
    /// ```python
    /// k = (scores.shape[-1] + 1) // 2
    /// threshold = scores.kthvalue(k, dim=-1).values  # same lower median as torch.median
    /// sorted_errors, _ = torch.sort(errors.flatten())
    /// q = sorted_errors[int(0.9 * (sorted_errors.numel() - 1))]  # nearest-rank quantile
    /// ```
    ///
    /// ## Known problems
    /// Methods are reported only when the receiver is known to be a tensor, so that
    /// `df.median()` (pandas) or `statistics.mode(...)` stay quiet; NumPy's `np.median` is never
    /// reported.
    ///
    /// ## References
    /// - tpulint TPU pitfall catalog B.3 #24 and "Ops with known missing lowerings" (B.7)
    /// - PyTorch/XLA `torch_xla/csrc/autocast_mode.cpp` (`quantile` "not lowered") and
    ///   `codegen/xla_native_functions.yaml` (no `median`, `nanmedian`, `mode`; `kthvalue` and
    ///   `sort` are lowered)
    pub(crate) static SORT_STATISTIC = {
        code: "TPU205",
        name: "quantile-median-mode",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        check: check,
    }
}

/// TPU205
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if !context.callee_name(call).is_some_and(|name| {
        matches!(
            name,
            "quantile" | "nanquantile" | "median" | "nanmedian" | "mode"
        )
    }) {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let advice = match target.name.as_str() {
        "torch.quantile" | "torch.nanquantile" => "use `torch.sort` and index, or `kthvalue`",
        "torch.median" | "torch.nanmedian" => "use `kthvalue((n + 1) // 2)`",
        "torch.mode" => "count with `one_hot(...).sum()` and take `argmax`",
        _ => return,
    };
    super::report_unlowered_call(context, call, &target, Some(advice));
}

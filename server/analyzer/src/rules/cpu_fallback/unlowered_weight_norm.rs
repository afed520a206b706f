//! TPU210: weight normalisation, whose `_weight_norm_interface` has no lowering in either API.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.utils.weight_norm(module)` and
    /// `torch.nn.utils.parametrizations.weight_norm(module)`.
    ///
    /// ## Why is this bad?
    /// Both APIs recompute the weight with `torch._weight_norm`, which dispatches to
    /// `_weight_norm_interface`, and PyTorch/XLA has no lowering for it: measured on torch_xla
    /// 2.9.0, a forward pass through either runs `aten::_weight_norm_interface` on the CPU and a
    /// backward pass `aten::_weight_norm_interface_backward`, so the weight is copied to the host
    /// and back on every call. A user reported a vocoder taking two hours per step on TPU against
    /// one second on GPU because of it (pytorch/xla#4985). Moving to
    /// `parametrizations.weight_norm`, PyTorch's replacement for the deprecated API, does not
    /// help: it calls the same op (and renames the checkpoint keys).
    ///
    /// ## Example
    /// ```python
    /// conv = torch.nn.utils.weight_norm(nn.Conv1d(80, 512, 7))
    /// ```
    ///
    /// Use instead: for inference, fold the norm into the weight once after loading; for
    /// training, compute it with ordinary ops, which lower.
    /// ```python
    /// torch.nn.utils.remove_weight_norm(conv)  # or parametrize.remove_parametrizations(conv, "weight")
    ///
    /// class WeightNormConv1d(nn.Conv1d):
    ///     def __init__(self, *args, **kwargs):
    ///         super().__init__(*args, **kwargs)
    ///         self.g = nn.Parameter(self.weight.norm(dim=(1, 2), keepdim=True).detach())
    ///
    ///     def forward(self, x):
    ///         weight = self.g * self.weight / self.weight.norm(dim=(1, 2), keepdim=True)
    ///         return self._conv_forward(x, weight, self.bias)
    /// ```
    ///
    /// ## Known problems
    /// A call whose module is put on the host only is still reported. TorchTPU: no public CPU
    /// build to measure; nothing in its documentation says it lowers `_weight_norm_interface`.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json`
    ///   (cases `weight_norm.legacy`, `weight_norm.parametrizations`, `weight_norm.explicit`;
    ///   torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA issue #4985; `codegen/xla_native_functions.yaml` (no `_weight_norm_interface`)
    pub(crate) static UNLOWERED_WEIGHT_NORM = {
        code: "TPU210",
        name: "unlowered-weight-norm",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["weight_norm"],
        calls: WEIGHT_NORMS,
        check: check,
    }
}

const WEIGHT_NORMS: &[&str] = &[
    "torch.nn.utils.weight_norm",
    "torch.nn.utils.parametrizations.weight_norm",
];

/// TPU210
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if context.callee_name(call) != Some("weight_norm") {
        return;
    }
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    if !context
        .qualified_name(function)
        .is_some_and(|name| WEIGHT_NORMS.contains(&name.as_str()))
    {
        return;
    }
    let message = format!(
        "`{}` runs `_weight_norm_interface` on the CPU every forward and backward pass; fold it \
         into the weight for inference, or compute `g * v / v.norm(...)` explicitly",
        context.text(function)
    );
    context.report(function.byte_range(), message);
}

//! TPU203: CTC loss, which has no XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Severity;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for `F.ctc_loss(...)`, `torch.ctc_loss(...)` and `nn.CTCLoss(...)`.
    ///
    /// ## Why is this bad?
    /// `aten::_ctc_loss` has no XLA lowering: PyTorch/XLA's troubleshooting guide uses it as its
    /// example of an op that shows up as an `aten::` fallback counter. The log-probabilities and
    /// targets are copied to the host every step, the loss (and its backward) runs on the CPU,
    /// and the step's graph is cut around it. TorchTPU's host round-trip op list also includes
    /// `ctc_loss` (it needs the target lengths on the host).
    ///
    /// Measured on torch_xla 2.9.0: `F.ctc_loss`, `torch.ctc_loss` and `nn.CTCLoss` ran
    /// `aten::_ctc_loss` and `aten::_ctc_loss_backward` on the CPU.
    ///
    /// ## Example
    /// ```python
    /// criterion = nn.CTCLoss(blank=0)
    /// loss = criterion(log_probs, targets, input_lengths, target_lengths)
    /// ```
    ///
    /// Use instead: there is no lowered drop-in. Either keep the CTC loss on the CPU
    /// deliberately (move `log_probs` with `.cpu()` once, outside the compiled region, so the
    /// cost is visible), or implement the CTC forward recursion with fixed-shape tensor ops
    /// (`torch.logsumexp` over a padded label lattice).
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `ctc_loss.*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA, *Troubleshooting* (`aten::_ctc_loss` in the metrics report)
    /// - TorchTPU notes, A.5 (host round-trip ops include `ctc_loss`)
    pub(crate) static CTC_LOSS = {
        code: "TPU203",
        name: "ctc-loss",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["ctc_loss", "CTCLoss"],
        calls: ["ctc_loss", "CTCLoss"],
        check: check,
    }
}

/// TPU203
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if !context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "ctc_loss" | "CTCLoss"))
    {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    let (message, severity) = match target.name.as_str() {
        "torch.nn.CTCLoss" => (
            "`nn.CTCLoss` runs `aten::_ctc_loss` on the CPU: it has no XLA lowering".to_string(),
            // Built once, evaluated every step.
            Severity::Warning,
        ),
        "torch.nn.functional.ctc_loss" | "torch.ctc_loss" if target.receiver.is_none() => (
            format!(
                "`{}` has no XLA lowering and runs on the CPU{}",
                context.text(function),
                helpers::hot_path_suffix(context)
            ),
            context.hot_path_severity(),
        ),
        _ => return,
    };
    context.report(function.byte_range(), message).severity = severity;
}

//! TPU208: `torch.multinomial` drawing several samples without replacement.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.multinomial(probs, n)` / `probs.multinomial(n)` with
    /// `replacement=False` (the default) and a number of samples other than 1.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA lowers `multinomial` only with replacement or for a single sample; sampling
    /// several items without replacement "is challenging to parallelize" and falls back to the
    /// CPU (pytorch/xla#4865): the probabilities are copied to the host and the samples back,
    /// every call. On CUDA the same call already synchronises the host.
    ///
    /// Measured on torch_xla 2.9.0: `torch.multinomial(p, 3)` ran `aten::multinomial` on the CPU;
    /// with `replacement=True`, or a single sample, it was lowered.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// idx = torch.multinomial(weights, num_samples=k)
    /// ```
    ///
    /// Use instead: the Gumbel-top-k trick, which draws `k` distinct indices with the same
    /// distribution using ops that lower.
    /// ```python
    /// gumbel = -torch.log(-torch.log(torch.rand_like(weights)))
    /// idx = torch.topk(torch.log(weights) + gumbel, k, dim=-1).indices
    /// ```
    ///
    /// ## Known problems
    /// A number of samples held in a variable is assumed to be greater than 1; a
    /// `replacement=` given through a variable is not followed (no report).
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `multinomial.*`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` `multinomial` (fallback when
    ///   `!replacement && num_samples != 1`); pytorch/xla issue #4865
    pub(crate) static MULTINOMIAL_WITHOUT_REPLACEMENT = {
        code: "TPU208",
        name: "multinomial-without-replacement",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["multinomial"],
        calls: ["multinomial"],
        check: check,
    }
}

/// TPU208
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    if context.callee_name(call) != Some("multinomial") {
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    if target.name != "torch.multinomial" {
        return;
    }
    if target
        .input(source)
        .is_some_and(|input| helpers::is_on_host(context, input))
    {
        return;
    }
    let Some(samples) = target.argument(1, "num_samples", source) else {
        return;
    };
    if helpers::literal_number(samples, source).is_some_and(|n| n <= 1.0) {
        return;
    }
    match target.argument(2, "replacement", source) {
        None => {}
        Some(value) if helpers::literal_bool(value) == Some(false) => {}
        Some(_) => return,
    }
    let message = format!(
        "`multinomial` of {} samples without replacement{} falls back to the CPU; use Gumbel-top-k",
        helpers::short_code(context.text(samples)),
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    let range = call
        .field("function")
        .map_or(call.byte_range(), |f| f.byte_range());
    context.report(range, message).severity = severity;
}

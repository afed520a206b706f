//! CPU fallbacks: ops and argument combinations without an XLA/TPU lowering (TPU2xx).

mod ctc_loss;
mod dilated_max_pool;
mod embedding_bag;
mod fft_or_complex_op;
mod grid_sample;
mod multinomial_without_replacement;
mod random_op_with_generator;
mod randperm_with_options;
mod scaled_addmm;
mod sort_statistic;
mod torchvision_detection_op;
mod unlowered_interpolation_mode;
mod unlowered_linalg_op;
mod unlowered_op;
mod unlowered_scatter_reduction;
mod unlowered_weight_norm;
mod zero_norm;

use crate::kind;
use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &grid_sample::GRID_SAMPLE,
    &unlowered_interpolation_mode::UNLOWERED_INTERPOLATION_MODE,
    &ctc_loss::CTC_LOSS,
    &fft_or_complex_op::FFT_OR_COMPLEX_OP,
    &sort_statistic::SORT_STATISTIC,
    &unlowered_linalg_op::UNLOWERED_LINALG_OP,
    &random_op_with_generator::RANDOM_OP_WITH_GENERATOR,
    &multinomial_without_replacement::MULTINOMIAL_WITHOUT_REPLACEMENT,
    &embedding_bag::EMBEDDING_BAG,
    &unlowered_weight_norm::UNLOWERED_WEIGHT_NORM,
    &unlowered_scatter_reduction::UNLOWERED_SCATTER_REDUCTION,
    &dilated_max_pool::DILATED_MAX_POOL,
    &scaled_addmm::SCALED_ADDMM,
    &zero_norm::ZERO_NORM,
    &torchvision_detection_op::TORCHVISION_DETECTION_OP,
    &randperm_with_options::RANDPERM_WITH_OPTIONS,
    &unlowered_op::UNLOWERED_OP,
];

/// An op that PyTorch/XLA 2.9 runs on the CPU whatever its arguments, as measured in
/// `server/analyzer/data/torch_xla-2.9-fallbacks.json`, with the `aten::` op seen falling back.
pub(crate) struct UnloweredOp {
    /// The function's qualified name (`torch.isin`); methods match `torch.<method>` too.
    pub name: &'static str,
    pub aten: &'static str,
    /// Only the backward falls back: quiet under `torch.no_grad()` / `inference_mode()`.
    pub backward_only: bool,
    pub advice: &'static str,
}

/// The names of [`UNLOWERED_OPS`] (qualified; their final segments are what TPU217 declares).
pub(crate) const UNLOWERED_OP_NAMES: [&str; UNLOWERED_OPS.len()] = {
    let mut names = [""; UNLOWERED_OPS.len()];
    let mut index = 0;
    while index < names.len() {
        names[index] = UNLOWERED_OPS[index].name;
        index += 1;
    }
    names
};

/// Ops without a lowering that no argument-specific rule covers (TPU217). Argument-dependent
/// fallbacks have rules of their own (TPU202 interpolation modes, TPU211 scatter reductions …).
pub(crate) const UNLOWERED_OPS: &[UnloweredOp] = &[
    UnloweredOp {
        name: "torch.isin",
        aten: "aten::isin",
        backward_only: false,
        advice: "compare with broadcasting: `(x[..., None] == values).any(-1)`",
    },
    UnloweredOp {
        name: "torch.searchsorted",
        aten: "aten::searchsorted",
        backward_only: false,
        advice: "count with broadcasting: `(sorted[..., None, :] < v[..., None]).sum(-1)`",
    },
    UnloweredOp {
        name: "torch.bucketize",
        aten: "aten::bucketize",
        backward_only: false,
        advice: "count with broadcasting: `(v[..., None] > boundaries).sum(-1)`",
    },
    UnloweredOp {
        name: "torch.logcumsumexp",
        aten: "aten::_logcumsumexp",
        backward_only: false,
        advice: "subtract the running max and use `cumsum` of `exp`",
    },
    UnloweredOp {
        name: "torch.poisson",
        aten: "aten::poisson",
        backward_only: false,
        advice: "sample on the CPU in the data pipeline",
    },
    UnloweredOp {
        name: "torch.nn.functional.glu",
        aten: "aten::glu_backward",
        backward_only: true,
        advice: "split and gate explicitly: `a, b = x.chunk(2, dim); a * torch.sigmoid(b)`",
    },
];

/// Reports `call` (resolved to `target`) as an op without an XLA lowering, at hot-path severity,
/// unless its input is visibly on the host already; `advice` follows the message after a `;`.
fn report_unlowered_call(
    context: &mut crate::checker::Context<'_, '_>,
    call: tree_sitter::Node<'_>,
    target: &crate::rules::helpers::TorchCall<'_>,
    advice: Option<&str>,
) {
    use crate::rules::helpers;
    if target
        .input(context.source())
        .is_some_and(|input| helpers::is_on_host(context, input))
    {
        return;
    }
    let Some((function, _)) = crate::syntax::call_parts(call) else {
        return;
    };
    let advice = advice
        .map(|advice| format!("; {advice}"))
        .unwrap_or_default();
    let message = format!(
        "`{}` has no XLA lowering and runs on the CPU{}{advice}",
        context.text(function),
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(function.byte_range(), message).severity = severity;
}

/// Whether `node` runs with autograd off: inside `with torch.no_grad():` or
/// `with torch.inference_mode():` in the same function, or in a function decorated with
/// `@torch.no_grad()` / `@torch.inference_mode()`. Ops whose training path falls back but whose
/// forward-only path lowers (measured: `F.embedding_bag`, `F.glu`) are quiet there.
fn under_no_grad<'t>(
    context: &crate::checker::Context<'t, '_>,
    node: tree_sitter::Node<'t>,
) -> bool {
    use crate::syntax::NodeExt;
    let mut current = context.parent(node);
    while let Some(ancestor) = current {
        match ancestor.kind_key() {
            kind::FUNCTION_DEFINITION => {
                return context.parent(ancestor).is_some_and(|decorated| {
                    decorated.is(kind::DECORATED_DEFINITION)
                        && crate::semantic::summaries::decorator_targets(decorated)
                            .into_iter()
                            .filter_map(|target| context.qualified_name(target))
                            .any(|name| disables_grad(&name))
                });
            }
            kind::CLASS_DEFINITION | kind::LAMBDA => return false,
            kind::WITH_STATEMENT => {
                for clause in ancestor.named_nodes() {
                    if clause.is_not(kind::WITH_CLAUSE) {
                        continue;
                    }
                    for item in clause.named_nodes() {
                        if item
                            .field("value")
                            .filter(|value| value.is(kind::CALL))
                            .and_then(|call| call.field("function"))
                            .and_then(|function| context.qualified_name(function))
                            .is_some_and(|name| disables_grad(&name))
                        {
                            return true;
                        }
                    }
                }
            }
            _ => {}
        }
        current = context.parent(ancestor);
    }
    false
}

/// Whether the value `result` computes reaches nothing differentiable: a method of its chain
/// cuts the gradient (`F.interpolate(mask, mode="trilinear").round().bool()`, `.detach()`), or
/// the chain ends in a comparison (`up(x) > 0.5`). The chain's intermediate values are bound to
/// no name, so no backward pass reaches `result` through them.
fn result_leaves_autograd<'t>(
    context: &crate::checker::Context<'t, '_>,
    result: tree_sitter::Node<'t>,
) -> bool {
    use crate::syntax::NodeExt;
    let mut value = result;
    while let Some(parent) = context.parent(value) {
        if parent.is(kind::COMPARISON_OPERATOR) {
            return true;
        }
        let method_call = (parent.is(kind::ATTRIBUTE)
            && parent.field("object").is_some_and(|o| o.id() == value.id()))
        .then(|| context.parent(parent))
        .flatten()
        .filter(|call| {
            call.is(kind::CALL)
                && call
                    .field("function")
                    .is_some_and(|f| f.id() == parent.id())
        });
        let Some(method_call) = method_call else {
            return false;
        };
        let method = parent
            .field("attribute")
            .map(|a| context.text(a))
            .unwrap_or("");
        if crate::torch_api::cuts_gradient(method) {
            return true;
        }
        value = method_call;
    }
    false
}

/// The context managers and decorators that turn autograd off.
fn disables_grad(qualified_name: &str) -> bool {
    matches!(qualified_name, "torch.no_grad" | "torch.inference_mode")
}

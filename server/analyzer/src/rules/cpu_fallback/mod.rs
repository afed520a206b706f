//! CPU fallbacks: ops and argument combinations without an XLA/TPU lowering (TPU2xx).

mod ctc_loss;
mod dilated_max_pool;
mod embedding_bag;
mod fft_or_complex_op;
mod grid_sample;
mod legacy_weight_norm;
mod multinomial_without_replacement;
mod random_op_with_generator;
mod randperm_with_options;
mod scaled_addmm;
mod sort_statistic;
mod torchvision_detection_op;
mod unlowered_interpolation_mode;
mod unlowered_linalg_op;
mod unlowered_scatter_reduction;
mod zero_norm;

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
    &legacy_weight_norm::LEGACY_WEIGHT_NORM,
    &unlowered_scatter_reduction::UNLOWERED_SCATTER_REDUCTION,
    &dilated_max_pool::DILATED_MAX_POOL,
    &scaled_addmm::SCALED_ADDMM,
    &zero_norm::ZERO_NORM,
    &torchvision_detection_op::TORCHVISION_DETECTION_OP,
    &randperm_with_options::RANDPERM_WITH_OPTIONS,
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

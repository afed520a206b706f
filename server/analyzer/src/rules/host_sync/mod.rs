//! Host syncs: code that makes the host wait for the TPU to produce a value (TPU1xx).

mod clip_grad_norm_compared;
mod data_dependent_loop_count;
mod print_tensor_in_hot_path;
mod progress_bar_tensor;
mod rank_divergent_materialization;
mod tensor_condition_in_hot_path;
mod tensor_formatted_in_hot_path;
mod tensor_host_copy_in_hot_path;
mod tensor_item_in_hot_path;
mod tensor_to_python_number;
mod unsynchronized_timing;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &tensor_item_in_hot_path::TENSOR_ITEM_IN_HOT_PATH,
    &tensor_host_copy_in_hot_path::TENSOR_HOST_COPY_IN_HOT_PATH,
    &print_tensor_in_hot_path::PRINT_TENSOR_IN_HOT_PATH,
    &tensor_formatted_in_hot_path::TENSOR_FORMATTED_IN_HOT_PATH,
    &progress_bar_tensor::PROGRESS_BAR_TENSOR,
    &tensor_to_python_number::TENSOR_TO_PYTHON_NUMBER,
    &tensor_condition_in_hot_path::TENSOR_CONDITION_IN_HOT_PATH,
    &clip_grad_norm_compared::CLIP_GRAD_NORM_COMPARED,
    &data_dependent_loop_count::DATA_DEPENDENT_LOOP_COUNT,
    &rank_divergent_materialization::RANK_DIVERGENT_MATERIALIZATION,
    &unsynchronized_timing::UNSYNCHRONIZED_TIMING,
];

//! Backend idioms: deprecated torch_xla APIs, compile backends, per-step barriers, TorchTPU
//! compile requirements (TPU6xx).

pub(crate) mod compile_without_tpu_backend;
mod deprecated_mark_step;
mod deprecated_xla_device;
mod env_var_after_backend_import;
mod inference_mode_with_compile;
mod optimizer_step_without_reduce;
mod optimizer_without_capturable;
mod plain_loader_per_step_copy;
mod removed_torch_xla_api;
mod torch_tpu_probe_for_torch_xla;
mod torchtpu_dynamic_compile;
mod torchtpu_graph_break;
mod torchtpu_internal_api;
mod training_loop_without_sync;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &deprecated_mark_step::DEPRECATED_MARK_STEP,
    &deprecated_xla_device::DEPRECATED_XLA_DEVICE,
    &compile_without_tpu_backend::COMPILE_WITHOUT_TPU_BACKEND,
    &torchtpu_dynamic_compile::TORCHTPU_DYNAMIC_COMPILE,
    &training_loop_without_sync::TRAINING_LOOP_WITHOUT_SYNC,
    &optimizer_step_without_reduce::OPTIMIZER_STEP_WITHOUT_REDUCE,
    &plain_loader_per_step_copy::PLAIN_LOADER_PER_STEP_COPY,
    &optimizer_without_capturable::OPTIMIZER_WITHOUT_CAPTURABLE,
    &inference_mode_with_compile::INFERENCE_MODE_WITH_COMPILE,
    &torchtpu_internal_api::TORCHTPU_INTERNAL_API,
    &removed_torch_xla_api::REMOVED_TORCH_XLA_API,
    &torchtpu_graph_break::TORCHTPU_GRAPH_BREAK,
    &env_var_after_backend_import::ENV_VAR_AFTER_BACKEND_IMPORT,
    &torch_tpu_probe_for_torch_xla::TORCH_TPU_PROBE_FOR_TORCH_XLA,
];

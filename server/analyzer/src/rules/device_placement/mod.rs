//! Device placement: hard-coded CUDA, CPU tensors meeting device tensors, checkpoints (TPU4xx).

pub(crate) mod cpu_tensor_meets_device_tensor;
pub(crate) mod cuda_availability_choice;
mod cuda_backend_flag;
mod cuda_device_string;
mod cuda_method_call;
mod cuda_only_api;
pub(crate) mod factory_then_move;
mod jax_import_before_guard;
mod optimizer_before_device_move;
mod pin_memory_on_tpu;
mod torch_load_without_map_location;
mod torch_save_device_tensors;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &cuda_device_string::CUDA_DEVICE_STRING,
    &cuda_availability_choice::CUDA_AVAILABILITY_CHOICE,
    &cuda_method_call::CUDA_METHOD_CALL,
    &cuda_only_api::CUDA_ONLY_API,
    &cpu_tensor_meets_device_tensor::CPU_TENSOR_MEETS_DEVICE_TENSOR,
    &torch_load_without_map_location::TORCH_LOAD_WITHOUT_MAP_LOCATION,
    &torch_save_device_tensors::TORCH_SAVE_DEVICE_TENSORS,
    &factory_then_move::FACTORY_THEN_MOVE,
    &pin_memory_on_tpu::PIN_MEMORY_ON_TPU,
    &cuda_backend_flag::CUDA_BACKEND_FLAG,
    &jax_import_before_guard::JAX_IMPORT_BEFORE_GUARD,
    &optimizer_before_device_move::OPTIMIZER_BEFORE_DEVICE_MOVE,
];

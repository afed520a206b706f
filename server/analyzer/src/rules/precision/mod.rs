//! Precision and dtype: float64, float16 vs bfloat16, autocast and loss scaling on TPU (TPU5xx).

mod autocast_around_backward;
mod cuda_autocast;
mod deprecated_xla_precision_env;
mod dtype_use;
mod float16_dtype;
mod float64_numpy_conversion;
mod float64_tensor;
mod grad_scaler_on_tpu;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &float64_tensor::FLOAT64_TENSOR,
    &float64_numpy_conversion::FLOAT64_NUMPY_CONVERSION,
    &float16_dtype::FLOAT16_DTYPE,
    &cuda_autocast::CUDA_AUTOCAST,
    &grad_scaler_on_tpu::GRAD_SCALER_ON_TPU,
    &deprecated_xla_precision_env::DEPRECATED_XLA_PRECISION_ENV,
    &autocast_around_backward::AUTOCAST_AROUND_BACKWARD,
];

//! Device placement: hard-coded CUDA, CPU tensors meeting device tensors, checkpoints (TPU4xx).

mod cuda_device_string;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[&cuda_device_string::CUDA_DEVICE_STRING];

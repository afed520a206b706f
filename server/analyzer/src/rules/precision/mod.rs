//! Precision and dtype traps: float64, float16 where bf16 is native, CUDA autocast, GradScaler (TPU5xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

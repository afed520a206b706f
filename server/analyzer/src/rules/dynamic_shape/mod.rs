//! Dynamic shapes and recompilation: data-dependent output shapes and varying input shapes (TPU3xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

//! Distributed training: process-group backends, DDP arguments, rank-divergent materialisation (TPU7xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

//! Layout and padding: tensor dimensions that waste the TPU matrix unit (TPU8xx).

mod unaligned_batch_size;
mod unaligned_feature_dim;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &unaligned_feature_dim::UNALIGNED_FEATURE_DIM,
    &unaligned_batch_size::UNALIGNED_BATCH_SIZE,
];

//! Layout and padding: tensor dimensions that waste the TPU matrix unit (TPU8xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

//! Host syncs: code that makes the host wait for the TPU to produce a value (TPU1xx).

mod tensor_item_in_hot_path;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[&tensor_item_in_hot_path::TENSOR_ITEM_IN_HOT_PATH];

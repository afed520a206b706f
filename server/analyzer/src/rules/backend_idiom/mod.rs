//! Backend idioms: deprecated or wrong torch_xla / TorchTPU APIs and compile settings (TPU6xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

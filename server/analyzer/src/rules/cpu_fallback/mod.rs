//! CPU fallbacks: ops and argument combinations without an XLA/TPU lowering (TPU2xx).

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[];

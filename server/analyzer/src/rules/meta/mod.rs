//! Meta rules about tpulint itself, such as unused suppressions (TPU9xx).

mod unused_noqa;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[&unused_noqa::UNUSED_NOQA];

//! The rule catalog, one module per family (the hundreds digit of the code).
//!
//! Each family's `mod.rs` lists its rules in `RULES`, one line per rule; each rule is one file
//! with its documentation, its check function and its fix.

pub mod backend_idiom;
pub mod cpu_fallback;
pub mod device_placement;
pub mod distributed;
pub mod dynamic_shape;
pub mod helpers;
pub mod host_sync;
pub mod layout;
pub mod meta;
pub mod precision;
pub mod tensor_values;
pub mod tpu_api;

use crate::registry::RuleMeta;

/// Every rule of every family (unsorted; see [`crate::registry::rules`]).
pub fn all() -> Vec<&'static RuleMeta> {
    [
        host_sync::RULES,
        cpu_fallback::RULES,
        dynamic_shape::RULES,
        device_placement::RULES,
        precision::RULES,
        backend_idiom::RULES,
        distributed::RULES,
        layout::RULES,
        meta::RULES,
    ]
    .concat()
}

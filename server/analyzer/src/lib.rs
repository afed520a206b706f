//! tpulint's analysis engine: Python source in, TPU diagnostics and fixes out.
//!
//! Pipeline: [`syntax::parse`] (tree-sitter, never fails) → [`semantic::SemanticModel`] (imports,
//! backend, tensor/device facts, hot paths) → [`checker::check_tree`] (one traversal dispatching to
//! the enabled rules whose tokens occur in the file, [`prefilter`]) → [`suppression`] (noqa) → [`syntax_errors`] (never suppressed) →
//! [`Diagnostic`]s with byte ranges and [`Fix`]es.
//!
//! Architecture invariant: this crate does no I/O, spawns nothing, and knows nothing of LSP,
//! async runtimes or JSON. It builds for `wasm32-unknown-unknown`.

pub mod checker;
pub(crate) mod decimal;
pub mod diagnostic;
pub mod fix;
pub(crate) mod hash;
pub mod incremental;
pub mod kind;
pub mod prefilter;
pub mod registry;
pub mod rules;
pub mod runtime_codes;
pub mod semantic;
pub mod settings;
pub(crate) mod sort;
pub mod source;
pub mod suppression;
pub mod syntax;
pub mod syntax_errors;
pub(crate) mod torch_api;

pub use checker::{Context, Inspection, check_source, check_tree, check_tree_with, inspect};
pub use diagnostic::{Applicability, Diagnostic, DiagnosticTag, Edit, Fix, Related, Severity};
pub use fix::{FixOutcome, apply_fixes, fix_source};
pub use prefilter::Prefilter;
pub use registry::{Family, FixAvailability, RuleId, RuleMeta, rule_by_code_or_name, rules};
pub use runtime_codes::{RUNTIME_CODES, RuntimeCode, runtime_code};
pub use semantic::Backend;
pub use settings::{
    BackendSetting, Configuration, LibraryCodePolicy, RuleSelector, RuleSet, Settings,
    TestCodePolicy, TorchXlaVersion,
};
pub use source::{LineIndex, TextRange};
pub use syntax_errors::INVALID_SYNTAX;

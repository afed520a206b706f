//! TPU612: torch_xla environment variables set after `import torch_xla` read them.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Related;
use crate::fix::importer::Importer;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks for `os.environ[NAME] = ...` and `os.environ.setdefault(NAME, ...)` that run after
    /// an `import torch_xla` (earlier at module level, or in the function around the statement)
    /// for variables torch_xla reads or rewrites when it is imported: `TPU_LIBRARY_PATH`,
    /// `XLA_REGISTER_INSTALLED_PLUGINS`, `XLA_USE_EAGER_DEBUG_MODE`, `XLA_FLAGS` and
    /// `LIBTPU_INIT_ARGS`.
    ///
    /// ## Why is this bad?
    /// `torch_xla/__init__.py` reads these when the package is imported ("These needs to be
    /// called before the _XLAC module is loaded"): set afterwards, a custom libtpu path, plugin
    /// registration and eager debug mode silently do not happen.
    /// `XLA_FLAGS` (always) and `LIBTPU_INIT_ARGS` (on a TPU VM) are extended with torch_xla's
    /// defaults at import, so a later assignment drops those defaults and a later `setdefault`
    /// does nothing.
    ///
    /// ## Example
    /// ```python
    /// import torch_xla
    /// os.environ["XLA_USE_EAGER_DEBUG_MODE"] = "1"
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import os
    /// os.environ["XLA_USE_EAGER_DEBUG_MODE"] = "1"
    /// import torch_xla
    /// ```
    /// or set the variable in the launch environment.
    ///
    /// ## Fix safety
    /// No fix: moving the assignment above the import may move other code.
    ///
    /// ## Known problems
    /// `PT_XLA_DEBUG` is not reported: besides the import-time setup, torch_xla's C++ side reads
    /// it later, and torch_xla's own tests set it after the import. torch_xla imported by another
    /// module first is not seen. TorchTPU, which locks its
    /// environment when the backend initialises, is not covered yet.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/__init__.py (`_setup_xla_flags`,
    ///   `_setup_tpu_vm_library_path`, `XLA_REGISTER_INSTALLED_PLUGINS`,
    ///   `XLA_USE_EAGER_DEBUG_MODE` at import)
    pub(crate) static ENV_VAR_AFTER_BACKEND_IMPORT = {
        code: "TPU612",
        name: "env-var-after-backend-import",
        severity: Warning,
        fix: None,
        kinds: ["assignment", "call"],
        tokens: ["torch_xla"],
        calls: ["os.environ.setdefault"],
        check: check,
    }
}

/// Variables read at import, and whether torch_xla extends them (then a later assignment
/// drops its defaults rather than being ignored).
const READ_AT_IMPORT: &[(&str, bool)] = &[
    ("TPU_LIBRARY_PATH", false),
    ("XLA_REGISTER_INSTALLED_PLUGINS", false),
    ("XLA_USE_EAGER_DEBUG_MODE", false),
    ("XLA_FLAGS", true),
    ("LIBTPU_INIT_ARGS", true),
];

/// TPU612
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    let source = context.source();
    let (key, setdefault) = match node.kind_key() {
        kind::ASSIGNMENT => {
            let Some(left) = node.field("left").filter(|l| l.is(kind::SUBSCRIPT)) else {
                return;
            };
            let Some(environ) = left.field("value") else {
                return;
            };
            if context.qualified_name(environ).as_deref() != Some("os.environ") {
                return;
            }
            let Some(key) = left.field("subscript") else {
                return;
            };
            (key, false)
        }
        _ => {
            let Some((function, arguments)) = context.call_parts(node) else {
                return;
            };
            if context.qualified_name(function).as_deref() != Some("os.environ.setdefault") {
                return;
            }
            let Some(key) = syntax::positional_args(arguments).first().copied() else {
                return;
            };
            (key, true)
        }
    };
    let Some(name) = syntax::string_value(key, source) else {
        return;
    };
    let Some(&(name, extended)) = READ_AT_IMPORT.iter().find(|(known, _)| *known == name) else {
        return;
    };
    let Some(import) = Importer::new(context, node).package_imported_before("torch_xla") else {
        return;
    };
    let message = match (extended, setdefault) {
        (true, true) => format!(
            "`setdefault(\"{name}\", ...)` after `import torch_xla` does nothing: torch_xla already set it"
        ),
        (true, false) => format!(
            "`{name}` assigned after `import torch_xla` drops the defaults torch_xla added at import"
        ),
        (false, _) => {
            format!("`{name}` is read when torch_xla is imported; set it before `import torch_xla`")
        }
    };
    let diagnostic = context.report(node.byte_range(), message);
    diagnostic.related.push(Related {
        range: import,
        message: "torch_xla is imported here".to_string(),
    });
}

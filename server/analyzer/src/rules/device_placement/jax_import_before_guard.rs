//! TPU412: `import jax` in a PyTorch/XLA file before `jax_import_guard()` ran.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax::{NodeExt, node_text};

declare_rule! {
    /// ## What it does
    /// Checks, in files that import `torch_xla`, for a module-level import of `jax` (or a
    /// `jax.*` module such as `jax.experimental.pallas`) that nothing before it makes torch_xla
    /// take the TPU: no call of `jax_import_guard()` (or
    /// `torch_xla._XLAC._init_computation_client()`) and no use of the XLA device
    /// (`torch_xla.device()`, `xm.xla_device()`) earlier at module level.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA's Pallas guide: "it's very important to run `jax_import_guard()` before
    /// importing any jax modules. Otherwise, the program will hang on TPU as jax will lock the
    /// TPU and torch-xla cannot access it." The guard makes torch_xla take the TPU first.
    ///
    /// ## Example
    /// ```python
    /// import torch_xla
    /// import jax
    /// from jax.experimental import pallas as pl
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla
    /// from torch_xla.experimental.custom_kernel import jax_import_guard
    ///
    /// def build_kernel():
    ///     jax_import_guard()
    ///     from jax.experimental import pallas as pl
    ///     ...
    /// ```
    /// (torch_xla itself imports jax inside functions, after the guard: calling the guard at
    /// module level "could cause problems for `xmp.spawn`").
    ///
    /// ## Fix safety
    /// No fix: where the guard may run depends on how the program is launched.
    ///
    /// ## Known problems
    /// Imports inside functions are not reported: they run when the function is called, which
    /// in practice is after tensors were put on the device (torch_xla's own kernels import jax
    /// that way, or under `@requires_jax`). Only the first unguarded jax import is reported. A
    /// guard called in another module before this one is imported is not seen.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/master/docs/source/features/pallas.md
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/experimental/custom_kernel.py
    ///   (imports jax inside functions after the guard)
    pub(crate) static JAX_IMPORT_BEFORE_GUARD = {
        code: "TPU412",
        name: "jax-import-before-guard",
        severity: Warning,
        fix: None,
        kinds: ["import_statement", "import_from_statement"],
        tokens: ["jax"],
        check: check,
    }
}

/// TPU412
fn check<'t>(context: &mut Context<'t, '_>, statement: Node<'t>) {
    let source = context.source();
    let Some(module) = imported_jax_module(statement, source) else {
        return;
    };
    // In a function the import runs when it is called, normally after the program's tensors
    // put torch_xla on the TPU (torch_xla's own kernels import jax that way).
    if context.semantic().function().is_some() {
        return;
    }
    if !context.semantic().imports_module("torch_xla") {
        return;
    }
    // Walk up the enclosing blocks; any earlier statement there that calls the guard (or an
    // earlier jax import, reported already) settles it.
    let mut child = statement;
    let mut current = context.parent(statement);
    while let Some(block) = current {
        if block.is_any(&[kind::BLOCK, kind::MODULE]) {
            for sibling in block.named_nodes() {
                if sibling.start_byte() >= child.start_byte() {
                    break;
                }
                if calls_guard(sibling, source)
                    || crate::rules::distributed::first_device_use(context, sibling).is_some()
                {
                    return;
                }
                if imported_jax_module(sibling, source).is_some() {
                    return;
                }
            }
        }
        // `@requires_jax` (torch_xla's own decorator) runs the guard before the function.
        if block.is(kind::DECORATED_DEFINITION) && decorated_with_guard(block, source) {
            return;
        }
        child = block;
        current = context.parent(block);
    }
    context.report(
        statement.byte_range(),
        format!(
            "`{module}` is imported before `jax_import_guard()`: jax may lock the TPU and torch_xla hang"
        ),
    );
}

/// The jax module an import statement loads (`jax`, `jax.numpy`, `jax.experimental.pallas`).
fn imported_jax_module(statement: Node<'_>, source: &str) -> Option<String> {
    let compact = |node: Node<'_>| -> String {
        node_text(node, source)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    let is_jax = |name: &str| name == "jax" || name.starts_with("jax.");
    match statement.kind_key() {
        kind::IMPORT_FROM_STATEMENT => statement
            .field("module_name")
            .map(compact)
            .filter(|name| is_jax(name)),
        kind::IMPORT_STATEMENT => {
            let mut cursor = statement.walk();
            statement
                .children_by_field_name("name", &mut cursor)
                .filter_map(|name| match name.kind_key() {
                    kind::ALIASED_IMPORT => name.field("name"),
                    _ => Some(name),
                })
                .map(compact)
                .find(|name| is_jax(name))
        }
        _ => None,
    }
}

/// A definition decorated with `@requires_jax` or `@jax_import_guard`-like decorators.
fn decorated_with_guard(decorated: Node<'_>, source: &str) -> bool {
    decorated
        .named_nodes()
        .filter(|child| child.is(kind::DECORATOR))
        .any(|decorator| {
            let text = node_text(decorator, source);
            text.contains("requires_jax") || text.contains("jax_import_guard")
        })
}

/// `jax_import_guard()` / `custom_kernel.jax_import_guard()` (or the client initialisation it
/// performs, `torch_xla._XLAC._init_computation_client()`) as a statement of its own.
fn calls_guard(statement: Node<'_>, source: &str) -> bool {
    statement.is(kind::EXPRESSION_STATEMENT)
        && statement
            .named_child(0)
            .filter(|call| call.is(kind::CALL))
            .and_then(|call| call.field("function"))
            .is_some_and(|function| {
                let text = node_text(function, source);
                text == "jax_import_guard"
                    || text.ends_with(".jax_import_guard")
                    || text.ends_with("._init_computation_client")
            })
}

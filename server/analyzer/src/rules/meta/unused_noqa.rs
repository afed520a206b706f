//! TPU901: a `# noqa: TPUxxx` code that suppresses nothing.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;

declare_rule! {
    /// ## What it does
    /// Checks for `# noqa: TPUxxx` comments naming a tpulint rule that reports nothing on that line.
    ///
    /// ## Why is this bad?
    /// A stale suppression hides the next real finding on the same line, and tells readers a
    /// TPU problem exists where there is none. Codes of other tools (`E501`, `F401`) and bare
    /// `# noqa` comments are left alone; codes of disabled rules are not judged.
    ///
    /// ## Example
    /// ```python
    /// total = loss.detach()  # noqa: TPU101
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// total = loss.detach()
    /// ```
    ///
    /// ## Fix safety
    /// The fix removes the unused codes (or the whole directive) and is safe: it changes a comment.
    ///
    /// ## References
    /// - ruff's RUF100 and flake8's `noqa` semantics, which tpulint's suppressions follow
    pub(crate) static UNUSED_NOQA = {
        code: "TPU901",
        name: "unused-noqa",
        severity: Info,
        fix: Always,
        kinds: [],
        tokens: ["noqa"],
        check: check,
    }
}

/// TPU901 is computed after the traversal, when every other rule has reported
/// (see `suppression.rs`); it registers for no node kind.
fn check(_context: &mut Context<'_, '_>, _node: Node<'_>) {}

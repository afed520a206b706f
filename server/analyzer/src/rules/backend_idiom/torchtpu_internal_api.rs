//! TPU610: imports from `torch_tpu._internal`.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::syntax::NodeExt;
use crate::syntax::node_text;

declare_rule! {
    /// ## What it does
    /// Checks for imports of `torch_tpu._internal` and its submodules.
    ///
    /// ## Why is this bad?
    /// TorchTPU's API policy says that anything in a `_`-prefixed module is internal, "unstable
    /// and may change without notice", and that users are advised not to use it. Names there have
    /// already changed between builds (`DeferMode` became `EagerMode`). Public equivalents live in
    /// `torch.tpu` and `torch.accelerator`.
    ///
    /// ## Example
    /// ```python
    /// from torch_tpu._internal import execution_mode as em
    /// ```
    ///
    /// Use instead: the public `torch.tpu` / `torch.accelerator` API where one exists; otherwise
    /// keep the internal import in one module of your project so a rename is fixed in one place.
    ///
    /// ## Known problems
    /// Some features (execution modes, bounded dynamism, the profiler) have no public API yet;
    /// suppress the finding with `# noqa: TPU610` where the internal module is the only way.
    ///
    /// ## References
    /// - TorchTPU `docs/developers/api_policy.md` (API stability) and `docs/notebooks/eager_mode.py`
    ///   (execution-mode names), https://github.com/google-pytorch/torch_tpu
    pub(crate) static TORCHTPU_INTERNAL_API = {
        code: "TPU610",
        name: "torchtpu-internal-api",
        severity: Info,
        fix: None,
        kinds: ["import_statement", "import_from_statement"],
        tokens: ["_internal"],
        check: check,
    }
}

/// TPU610
fn check<'t>(context: &mut Context<'t, '_>, statement: Node<'t>) {
    let source = context.source();
    let mut modules = Vec::new();
    if let Some(module) = statement.field("module_name") {
        modules.push(module);
    }
    if statement.is(kind::IMPORT_STATEMENT) {
        let mut cursor = statement.walk();
        for name in statement.children_by_field_name("name", &mut cursor) {
            let module = if name.is(kind::ALIASED_IMPORT) {
                name.field("name")
            } else {
                Some(name)
            };
            modules.extend(module);
        }
    }
    for module in modules {
        let text: String = node_text(module, source)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let internal = text == "torch_tpu._internal" || text.starts_with("torch_tpu._internal.");
        // `from torch_tpu import _internal`
        let from_internal = text == "torch_tpu"
            && statement.is(kind::IMPORT_FROM_STATEMENT)
            && node_text(statement, source).contains("_internal");
        if internal || from_internal {
            context.report(
                module.byte_range(),
                "`torch_tpu._internal` is unstable and may change without notice",
            );
            return;
        }
    }
}

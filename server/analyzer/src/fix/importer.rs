//! The importer: how a fix names a module or one of its members at the place it edits, and where
//! it adds the import when no usable binding exists.
//!
//! The order of preference, for a fix at `site` that needs module `M` of package `P`:
//! 1. a binding already in scope at `site` that a *run-time* import made (`import M as m`,
//!    `from M import x`, `import M.sub` for `M`) — one made under `if TYPE_CHECKING:` does not
//!    exist when the code runs and is never used;
//! 2. a new import next to an existing run-time import of `P` that executes before `site` (found
//!    in the module summary's import records): in the function around `site` (in a block that
//!    encloses it), else at module level — inside the same
//!    `if is_torch_xla_available():` / `try:` block as the file's own import of `P`, so the new
//!    import is exactly as guarded as the one the file already relies on;
//! 3. for a package every PyTorch file can import (`torch`), a new module-level import;
//! 4. for an optional package (`torch_xla`, `torch_tpu`, `jax`) that the file does not import
//!    anywhere it could reuse, a module-level import would raise `ImportError` on every machine
//!    without it: the fix is then display-only (shown in the editor, never applied by `--fix`).
//!
//! A fix combines the applicability of its own rewrite with [`ImportedName::applicability`].

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::{Applicability, Edit};
use crate::fix::edits;
use crate::semantic::{ImportCondition, ImportRecord};
use crate::syntax::NodeExt;

/// Packages that a machine may lack: a module-level import of one in a file that does not
/// already import it unconditionally makes the file fail to import there.
pub const OPTIONAL_PACKAGES: WordList =
    word_list!["torch_xla", "torch_tpu", "jax", "jaxlib", "libtpu"];

/// How a fix refers to a module (or member) at its site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedName {
    /// The expression to write at the site, e.g. `xm`, `torch_xla`, `xr.world_size`.
    pub expression: String,
    /// The import to add, if any.
    pub edit: Option<Edit>,
    /// `Safe` when the name is bound where the import will execute; `DisplayOnly` when the only
    /// place left for the import is an unguarded module-level import of an optional package.
    pub applicability: Applicability,
}

impl ImportedName {
    /// The import edit as a list, for fixes that collect edits.
    pub fn edits(&self) -> Vec<Edit> {
        self.edit.iter().cloned().collect()
    }
}

/// Finds or adds the import a fix at `site` needs, from the module summary's import records
/// ([`crate::semantic::ModuleImports`]) and the functions around the site.
pub struct Importer<'a, 't, 's> {
    context: &'a Context<'t, 's>,
    site: Node<'t>,
}

/// An import record visible at the site, with how deep its scope is (0: module level; `n`: the
/// `n`-th enclosing function counted from the outside), so inner bindings win.
struct Visible<'r> {
    record: &'r ImportRecord,
    depth: usize,
}

impl<'a, 't, 's> Importer<'a, 't, 's> {
    pub fn new(context: &'a Context<'t, 's>, site: Node<'t>) -> Self {
        Importer { context, site }
    }

    /// A name for `module` at the site; `alias` is the conventional short name used when an
    /// import must be added (`Some("xm")` for `torch_xla.core.xla_model`).
    pub fn module(&self, module: &str, alias: Option<&'static str>) -> ImportedName {
        let visible = self.visible_records();
        if let Some(expression) = self.bound_expression(&visible, module) {
            return ImportedName {
                expression,
                edit: None,
                applicability: Applicability::Safe,
            };
        }
        let alias = alias.filter(|alias| self.alias_is_free(alias));
        let (line, expression) = match alias {
            Some(alias) if alias != module => {
                (format!("import {module} as {alias}"), alias.to_string())
            }
            _ => (format!("import {module}"), module.to_string()),
        };
        self.add_import(&visible, module, line, expression)
    }

    /// A name for `module.member` at the site: a `from module import member` binding in scope,
    /// else the module's name (found or imported as by [`Self::module`]) and `.member`.
    pub fn member(&self, module: &str, member: &str, alias: Option<&'static str>) -> ImportedName {
        let qualified = format!("{module}.{member}");
        if let Some(expression) = self.bound_expression(&self.visible_records(), &qualified) {
            return ImportedName {
                expression,
                edit: None,
                applicability: Applicability::Safe,
            };
        }
        let mut name = self.module(module, alias);
        name.expression = format!("{}.{member}", name.expression);
        name
    }

    /// The statement range of the last run-time import of `package` (or a submodule) that has
    /// run by the time the site runs, if any ([`Self::visible_records`]).
    pub fn package_imported_before(&self, package: &str) -> Option<crate::source::TextRange> {
        self.visible_records()
            .into_iter()
            .filter(|visible| visible.record.condition != ImportCondition::ExceptHandler)
            .find(|visible| visible.record.names_package(package))
            .map(|visible| visible.record.statement.clone())
    }

    /// The functions around the site, outermost first.
    fn enclosing_functions(&self) -> Vec<Node<'t>> {
        let mut functions = Vec::new();
        let mut current = self.context.parent(self.site);
        while let Some(node) = current {
            if node.is(kind::FUNCTION_DEFINITION) {
                functions.push(node);
            }
            current = self.context.parent(node);
        }
        functions.reverse();
        functions
    }

    /// The import records whose statement has run by the time the site runs, innermost scope
    /// first and later statements first within a scope. A module-level import counts when it
    /// comes before the site, or when the site is in a function (called after the module ran);
    /// an import in a function around the site counts when it comes before the site in a block
    /// that encloses the site. Imports in other functions, and under `if TYPE_CHECKING:`, never
    /// count.
    fn visible_records(&self) -> Vec<Visible<'_>> {
        let functions = self.enclosing_functions();
        let site = self.site.start_byte();
        let mut visible: Vec<Visible<'_>> = Vec::new();
        for record in self.context.semantic().imports().records() {
            // At any depth: `if TYPE_CHECKING:` around a `try` never runs either.
            if record.type_checking {
                continue;
            }
            let start = record.statement.start;
            if !record.in_function {
                if start < site || !functions.is_empty() {
                    visible.push(Visible { record, depth: 0 });
                }
                continue;
            }
            // The innermost function around the site that contains the statement.
            let Some(depth) = functions.iter().rposition(|function| {
                function.start_byte() <= start && record.statement.end <= function.end_byte()
            }) else {
                continue;
            };
            if start < site && self.block_encloses_site(record) {
                visible.push(Visible {
                    record,
                    depth: depth + 1,
                });
            }
        }
        // Deepest first, then the latest statement first.
        crate::sort::sort_stably_by_key(&mut visible, |v| {
            (
                usize::MAX - v.depth,
                usize::MAX - v.record.statement.start,
                0,
                "",
            )
        });
        visible
    }

    /// Whether the block holding an import statement also holds the site (an import in one
    /// branch of an `if` does not bind a name in the other).
    fn block_encloses_site(&self, record: &ImportRecord) -> bool {
        self.statement_node(record)
            .and_then(|statement| statement.parent())
            .is_some_and(|block| {
                block.start_byte() <= self.site.start_byte()
                    && self.site.end_byte() <= block.end_byte()
            })
    }

    /// The import statement node of a record. Import statements sit outside the traversal's
    /// ancestor stack; the lookup from the root is fine for the few statements a fix looks at.
    fn statement_node(&self, record: &ImportRecord) -> Option<Node<'t>> {
        let range = &record.statement;
        self.context
            .root()
            .named_descendant_for_byte_range(range.start, range.end)
            .filter(|node| node.start_byte() == range.start && node.end_byte() == range.end)
    }

    /// The expression naming `wanted` through a run-time binding visible at the site.
    fn bound_expression(&self, visible: &[Visible<'_>], wanted: &str) -> Option<String> {
        let semantic = self.context.semantic();
        for Visible { record, .. } in visible {
            let expression = if record.qualified == wanted {
                record.local.clone()
            } else if record.member.is_none()
                && is_under(wanted, &record.qualified)
                && is_under(&record.module, wanted)
            {
                // `import torch_xla.runtime` binds `torch_xla` and loads the submodule.
                format!("{}{}", record.local, &wanted[record.qualified.len()..])
            } else {
                continue;
            };
            // The name must still mean this import at the site (not shadowed).
            if semantic.import_of(&record.local) == Some(record.qualified.as_str()) {
                return Some(expression);
            }
        }
        None
    }

    /// Adds `line` next to an existing run-time import of the module's package, or at module
    /// level when that is safe.
    fn add_import(
        &self,
        visible: &[Visible<'_>],
        module: &str,
        line: String,
        expression: String,
    ) -> ImportedName {
        let source = self.context.source();
        let package = module.split('.').next().unwrap_or(module);
        // Innermost scope first; in it, an import that always runs there before a guarded one
        // (an `except` fallback runs only when the `try` failed: never an anchor).
        let mut depths: Vec<usize> = visible.iter().map(|v| v.depth).collect();
        depths.dedup();
        for depth in depths {
            for unconditional in [true, false] {
                let anchor = visible
                    .iter()
                    .filter(|v| v.depth == depth && v.record.names_package(package))
                    .filter(|v| {
                        let direct = matches!(
                            v.record.condition,
                            ImportCondition::Unconditional | ImportCondition::InFunction
                        );
                        direct == unconditional
                            && v.record.condition != ImportCondition::ExceptHandler
                    })
                    .find_map(|v| {
                        let statement = self.statement_node(v.record)?;
                        edits::insert_line_after(source, statement, &line)
                    });
                if let Some(edit) = anchor {
                    return ImportedName {
                        expression,
                        edit: Some(edit),
                        applicability: Applicability::Safe,
                    };
                }
            }
        }
        let edit = edits::insert_module_import(source, self.context.root(), &line);
        let applicability = if OPTIONAL_PACKAGES.contains(&package) {
            Applicability::DisplayOnly
        } else {
            Applicability::Safe
        };
        ImportedName {
            expression,
            edit: Some(edit),
            applicability,
        }
    }

    /// Whether `alias` can be bound without changing what an existing name means: no binding of
    /// it reaches the site and the file never uses the word.
    fn alias_is_free(&self, alias: &'static str) -> bool {
        if self.context.semantic().import_of(alias).is_some() {
            return false;
        }
        // A whole-file question, memoized and re-asked by incremental checking after an edit.
        let source = self.context.source();
        !self
            .context
            .semantic()
            .file_memo((CONTAINS_WORD, alias), || contains_word(source, alias))
    }
}

/// Whether dotted `name` is `package` or inside it.
fn is_under(name: &str, package: &str) -> bool {
    name.strip_prefix(package)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Whether `word` occurs in `text` as a whole identifier.
/// The `file_memo` question "does the text contain this word" ([`contains_word`]).
pub(crate) const CONTAINS_WORD: &str = "contains_word";

/// Whether `word` occurs in `text` with no identifier character on either side.
pub(crate) fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Applicability;
    use crate::registry::rule_by_code_or_name;
    use crate::settings::{BackendSetting, Settings};
    use crate::{check_source, fix_source};

    /// The text after the safe fixes of `code`, with the torch_xla backend.
    fn fixed(code: &str, source: &str) -> String {
        let mut settings = Settings::only(rule_by_code_or_name(code).expect("rule"));
        settings.backend = BackendSetting::TorchXla;
        fix_source(source, &settings, Applicability::Safe).output
    }

    fn applicabilities(code: &str, source: &str) -> Vec<Applicability> {
        let mut settings = Settings::only(rule_by_code_or_name(code).expect("rule"));
        settings.backend = BackendSetting::TorchXla;
        check_source(source, &settings)
            .into_iter()
            .filter_map(|d| d.fix.map(|f| f.applicability))
            .collect()
    }

    #[test]
    fn uses_the_binding_in_scope() {
        let source =
            "import torch_xla\nimport torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n";
        assert_eq!(
            fixed("TPU602", source),
            "import torch_xla\nimport torch_xla.core.xla_model as xm\n\nd = torch_xla.device()\n"
        );
    }

    #[test]
    fn adds_the_import_inside_the_function_that_imports_the_package() {
        // pytorch-lightning's shape: a TYPE_CHECKING import at module level, the run-time import
        // in the function.
        let source = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from torch_xla.distributed.parallel_loader import MpDeviceLoader\n\n\
                      def root_device():\n    import torch_xla.core.xla_model as xm\n\n    return xm.xla_device()\n";
        let output = fixed("TPU602", source);
        assert_eq!(
            output,
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from torch_xla.distributed.parallel_loader import MpDeviceLoader\n\n\
             def root_device():\n    import torch_xla.core.xla_model as xm\n    import torch_xla\n\n    return torch_xla.device()\n"
        );
    }

    #[test]
    fn never_uses_or_extends_a_type_checking_import() {
        let source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n\n\
                      def f(xm):\n    return xm.xla_device()\n";
        // `xm` here is a parameter, not the import: nothing to fix.
        assert!(applicabilities("TPU602", source).is_empty());
        let source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch_xla\n\n\
                      def f():\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\n";
        // `torch_xla` is bound only for type checkers: the fix adds a run-time import in `f`.
        assert_eq!(
            fixed("TPU601", source),
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch_xla\n\n\
             def f():\n    import torch_xla.core.xla_model as xm\n    import torch_xla\n    torch_xla.sync()\n"
        );
    }

    #[test]
    fn a_try_inside_a_type_checking_block_never_runs() {
        // The innermost condition is the `try`, but the `if TYPE_CHECKING:` around it means the
        // import never runs: no import may be added next to it, and with no run-time import of
        // torch_xla the fix is display-only.
        let source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    try:\n        import torch_xla.core.xla_model as xm\n    except ImportError:\n        pass\n\n\
                      def f():\n    xm.mark_step()\n";
        assert_eq!(
            applicabilities("TPU601", source),
            vec![Applicability::DisplayOnly]
        );
        assert_eq!(fixed("TPU601", source), source);
    }

    #[test]
    fn keeps_a_new_import_as_guarded_as_the_existing_one() {
        let source = "from transformers.utils import is_torch_xla_available\n\nif is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n\n\
                      def step():\n    xm.mark_step()\n";
        assert_eq!(
            fixed("TPU601", source),
            "from transformers.utils import is_torch_xla_available\n\nif is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n    import torch_xla\n\n\
             def step():\n    torch_xla.sync()\n"
        );
        let source = "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\nxm.mark_step()\n";
        assert_eq!(
            fixed("TPU601", source),
            "try:\n    import torch_xla.core.xla_model as xm\n    import torch_xla\nexcept ImportError:\n    xm = None\n\ntorch_xla.sync()\n"
        );
    }

    #[test]
    fn an_import_in_another_function_or_a_sibling_branch_does_not_count() {
        let source = "def setup():\n    import torch_xla\n\n\
                      def f(use_xla):\n    if use_xla:\n        import torch_xla.core.xla_model as xm\n    xm.mark_step()\n";
        // No run-time import of torch_xla reaches the call: display-only, never applied.
        assert_eq!(
            applicabilities("TPU601", source),
            vec![Applicability::DisplayOnly]
        );
        assert_eq!(fixed("TPU601", source), source);
    }

    #[test]
    fn one_line_guards_are_not_extended() {
        let source = "import os\nif os.environ.get('XLA'): import torch_xla.core.xla_model as xm\n\ndef f():\n    xm.mark_step()\n";
        assert_eq!(
            applicabilities("TPU601", source),
            vec![Applicability::DisplayOnly]
        );
    }

    #[test]
    fn an_unconditional_module_import_is_extended_at_module_level() {
        let source =
            "import torch_xla.core.xla_model as xm\nimport torch\n\ndef f():\n    xm.mark_step()\n";
        assert_eq!(
            fixed("TPU601", source),
            "import torch_xla.core.xla_model as xm\nimport torch_xla\nimport torch\n\ndef f():\n    torch_xla.sync()\n"
        );
    }

    #[test]
    fn words_and_packages() {
        assert!(super::contains_word("a = xr.x", "xr"));
        assert!(!super::contains_word("a = xrx + x_xr", "xr"));
        assert!(super::is_under("torch_xla.runtime", "torch_xla"));
        assert!(!super::is_under("torch_xlab", "torch_xla"));
    }
}

//! The importer: how a fix names a module or one of its members at the place it edits, and where
//! it adds the import when no usable binding exists.
//!
//! The order of preference, for a fix at `site` that needs module `M` of package `P`:
//! 1. a binding already in scope at `site` that a *run-time* import made (`import M as m`,
//!    `from M import x`, `import M.sub` for `M`) — one made under `if TYPE_CHECKING:` does not
//!    exist when the code runs and is never used;
//! 2. a new import next to an existing run-time import of `P` that executes before `site`: in the
//!    function around `site` (in a block that encloses it), else at module level — inside the same
//!    `if is_torch_xla_available():` / `try:` block as the file's own import of `P`, so the new
//!    import is exactly as guarded as the one the file already relies on;
//! 3. for a package every PyTorch file can import (`torch`), a new module-level import;
//! 4. for an optional package (`torch_xla`, `torch_tpu`, `jax`) that the file does not import
//!    anywhere it could reuse, a module-level import would raise `ImportError` on every machine
//!    without it: the fix is then display-only (shown in the editor, never applied by `--fix`).
//!
//! A fix combines the applicability of its own rewrite with [`ImportedName::applicability`].

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::{Applicability, Edit};
use crate::fix::edits;
use crate::syntax::{NodeExt, node_text};

/// Packages that a machine may lack: a module-level import of one in a file that does not
/// already import it unconditionally makes the file fail to import there.
pub const OPTIONAL_PACKAGES: &[&str] = &["torch_xla", "torch_tpu", "jax", "jaxlib", "libtpu"];

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

/// Finds or adds the import a fix at `site` needs. Cheap to create; each question scans the
/// enclosing functions of the site and the module's top-level statements.
pub struct Importer<'a, 't, 's> {
    context: &'a Context<'t, 's>,
    site: Node<'t>,
}

/// One name an import statement binds.
#[derive(Debug, Clone)]
struct ImportBinding {
    /// The local name (`xm`, `torch_xla`, `world_size`).
    local: String,
    /// What the local name refers to (`torch_xla.core.xla_model`, `torch_xla`, `torch_xla.runtime.world_size`).
    target: String,
    /// The dotted module the statement imports (`import torch_xla.runtime` binds `torch_xla`
    /// but imports `torch_xla.runtime`); equal to `target` for aliased and `from` imports.
    imported: String,
}

/// Where an import statement sits, as far as whether it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Directly in the module or a function body (or a `with` block there).
    Unconditional,
    /// Inside an `if` (other than `TYPE_CHECKING`) or `try` block.
    Guarded,
    /// Under `if TYPE_CHECKING:` — never runs.
    TypeChecking,
}

/// The import statements of one scope (the module or one function), in source order.
struct ScopeImports<'t> {
    /// `None` for the module.
    function: Option<Node<'t>>,
    statements: Vec<(Node<'t>, Placement)>,
}

impl<'a, 't, 's> Importer<'a, 't, 's> {
    pub fn new(context: &'a Context<'t, 's>, site: Node<'t>) -> Self {
        Importer { context, site }
    }

    /// A name for `module` at the site; `alias` is the conventional short name used when an
    /// import must be added (`Some("xm")` for `torch_xla.core.xla_model`).
    pub fn module(&self, module: &str, alias: Option<&str>) -> ImportedName {
        let scopes = self.scopes();
        if let Some(expression) = self.bound_expression(&scopes, module) {
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
        self.add_import(&scopes, module, line, expression)
    }

    /// A name for `module.member` at the site: a `from module import member` binding in scope,
    /// else the module's name (found or imported as by [`Self::module`]) and `.member`.
    pub fn member(&self, module: &str, member: &str, alias: Option<&str>) -> ImportedName {
        let scopes = self.scopes();
        let qualified = format!("{module}.{member}");
        if let Some(expression) = self.bound_expression(&scopes, &qualified) {
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

    /// The scopes whose bindings are visible at the site, innermost first: the enclosing
    /// functions, then the module. Class bodies are skipped (their names are not visible in
    /// methods).
    fn scopes(&self) -> Vec<ScopeImports<'t>> {
        let mut scopes = Vec::new();
        let mut current = self.context.parent(self.site);
        while let Some(node) = current {
            if node.kind_name() == "function_definition"
                && let Some(body) = node.field("body")
            {
                let mut statements = Vec::new();
                collect_imports(
                    self.context.source(),
                    body,
                    Placement::Unconditional,
                    &mut statements,
                    0,
                );
                scopes.push(ScopeImports {
                    function: Some(node),
                    statements,
                });
            }
            current = self.context.parent(node);
        }
        let mut statements = Vec::new();
        collect_imports(
            self.context.source(),
            self.context.root(),
            Placement::Unconditional,
            &mut statements,
            0,
        );
        scopes.push(ScopeImports {
            function: None,
            statements,
        });
        scopes
    }

    /// Whether an import statement has run by the time the site runs: in a function, it comes
    /// before the site in a block that encloses the site; at module level, it comes before the
    /// site, or the site is inside a function (called after the module ran).
    fn runs_before_site(&self, scope: &ScopeImports<'t>, statement: Node<'t>) -> bool {
        if statement.start_byte() >= self.site.start_byte() {
            return scope.function.is_none() && self.site_in_function();
        }
        if scope.function.is_some() {
            // Import statements sit outside the traversal's ancestor stack; `Node::parent` walks
            // down from the root, which is fine for the few statements a fix looks at.
            return statement
                .parent()
                .is_some_and(|block| encloses(block, self.site));
        }
        true
    }

    fn site_in_function(&self) -> bool {
        let mut current = self.context.parent(self.site);
        while let Some(node) = current {
            if node.kind_name() == "function_definition" {
                return true;
            }
            current = self.context.parent(node);
        }
        false
    }

    /// The expression naming `wanted` through a run-time binding visible at the site.
    fn bound_expression(&self, scopes: &[ScopeImports<'t>], wanted: &str) -> Option<String> {
        let source = self.context.source();
        let semantic = self.context.semantic();
        for scope in scopes {
            // Later bindings in a scope win; look at them first.
            for &(statement, placement) in scope.statements.iter().rev() {
                if placement == Placement::TypeChecking || !self.runs_before_site(scope, statement)
                {
                    continue;
                }
                for binding in bindings(statement, source) {
                    let expression = if binding.target == wanted {
                        binding.local.clone()
                    } else if wanted.starts_with(&format!("{}.", binding.target))
                        && (binding.imported == wanted
                            || binding.imported.starts_with(&format!("{wanted}.")))
                    {
                        // `import torch_xla.runtime` binds `torch_xla` and loads the submodule.
                        format!("{}{}", binding.local, &wanted[binding.target.len()..])
                    } else {
                        continue;
                    };
                    // The name must still mean this import at the site (not shadowed).
                    if semantic.import_of(&binding.local) == Some(binding.target.as_str()) {
                        return Some(expression);
                    }
                }
            }
        }
        None
    }

    /// Adds `line` next to an existing run-time import of the module's package, or at module
    /// level when that is safe.
    fn add_import(
        &self,
        scopes: &[ScopeImports<'t>],
        module: &str,
        line: String,
        expression: String,
    ) -> ImportedName {
        let source = self.context.source();
        let package = module.split('.').next().unwrap_or(module);
        let imports_package = |statement: Node<'t>| {
            bindings(statement, source)
                .iter()
                .any(|binding| in_package(&binding.imported, package))
        };
        for scope in scopes {
            let usable = |placement: Placement, statement: Node<'t>| {
                placement != Placement::TypeChecking
                    && self.runs_before_site(scope, statement)
                    && imports_package(statement)
            };
            // Prefer an unconditional import of the package, then a guarded one; the last
            // before the site among equals (closest to where the name is used).
            for wanted in [Placement::Unconditional, Placement::Guarded] {
                let anchor = scope
                    .statements
                    .iter()
                    .rev()
                    .filter(|(_, placement)| *placement == wanted)
                    .find(|&&(statement, placement)| usable(placement, statement))
                    .and_then(|&(statement, _)| edits::insert_line_after(source, statement, &line));
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
    fn alias_is_free(&self, alias: &str) -> bool {
        if self.context.semantic().import_of(alias).is_some() {
            return false;
        }
        !contains_word(self.context.source(), alias)
    }
}

/// Whether `module` is `package` or one of its submodules.
fn in_package(module: &str, package: &str) -> bool {
    module == package
        || module
            .strip_prefix(package)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Whether `word` occurs in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Whether `outer` contains `inner`.
fn encloses(outer: Node<'_>, inner: Node<'_>) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// The import statements directly in `block` and in its nested `if` / `try` / `with` blocks
/// (not in nested functions or classes), with how each is guarded.
fn collect_imports<'t>(
    source: &str,
    block: Node<'t>,
    placement: Placement,
    out: &mut Vec<(Node<'t>, Placement)>,
    depth: usize,
) {
    // Deeper nesting than this is not where imports live; the bound keeps the scan linear.
    if depth > 8 {
        return;
    }
    let mut cursor = block.walk();
    for statement in block.named_children(&mut cursor) {
        match statement.kind_name() {
            "import_statement" | "import_from_statement" => out.push((statement, placement)),
            "if_statement" => {
                let type_checking = statement
                    .field("condition")
                    .is_some_and(|condition| is_type_checking_test(condition, source));
                let mut clauses = statement.walk();
                for clause in statement.named_children(&mut clauses) {
                    let inner = match clause.kind_name() {
                        "block" if type_checking => Placement::TypeChecking,
                        "block" | "elif_clause" | "else_clause" => guarded(placement),
                        _ => continue,
                    };
                    collect_imports(source, clause, inner, out, depth + 1);
                }
            }
            "try_statement" | "elif_clause" | "else_clause" | "except_clause"
            | "finally_clause" => {
                collect_imports(source, statement, guarded(placement), out, depth + 1)
            }
            "with_statement" | "block" => {
                collect_imports(source, statement, placement, out, depth + 1)
            }
            _ => {}
        }
    }
}

fn guarded(outer: Placement) -> Placement {
    match outer {
        Placement::TypeChecking => Placement::TypeChecking,
        _ => Placement::Guarded,
    }
}

/// `TYPE_CHECKING`, `typing.TYPE_CHECKING`, `t.TYPE_CHECKING` (and `TYPE_CHECKING or ...`,
/// conservatively); `not TYPE_CHECKING` is a run-time test.
fn is_type_checking_test(condition: Node<'_>, source: &str) -> bool {
    let text = node_text(condition, source).trim();
    !text.starts_with("not") && text.contains("TYPE_CHECKING")
}

/// The names an import statement binds.
fn bindings(statement: Node<'_>, source: &str) -> Vec<ImportBinding> {
    let mut out = Vec::new();
    let compact = |node: Node<'_>| -> String {
        node_text(node, source)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    let mut cursor = statement.walk();
    match statement.kind_name() {
        "import_statement" => {
            for name in statement.children_by_field_name("name", &mut cursor) {
                match name.kind_name() {
                    "dotted_name" => {
                        let full = compact(name);
                        let root = full.split('.').next().unwrap_or("").to_string();
                        out.push(ImportBinding {
                            local: root.clone(),
                            target: root,
                            imported: full,
                        });
                    }
                    "aliased_import" => {
                        if let (Some(module), Some(alias)) =
                            (name.field("name"), name.field("alias"))
                        {
                            let full = compact(module);
                            out.push(ImportBinding {
                                local: compact(alias),
                                target: full.clone(),
                                imported: full,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        "import_from_statement" => {
            let Some(module) = statement
                .field("module_name")
                .filter(|m| m.kind_name() == "dotted_name")
            else {
                return out;
            };
            let module = compact(module);
            for name in statement.children_by_field_name("name", &mut cursor) {
                let (imported, local) = match name.kind_name() {
                    "dotted_name" => (name, name),
                    "aliased_import" => match (name.field("name"), name.field("alias")) {
                        (Some(imported), Some(alias)) => (imported, alias),
                        _ => continue,
                    },
                    _ => continue,
                };
                let target = format!("{module}.{}", compact(imported));
                out.push(ImportBinding {
                    local: compact(local),
                    target: target.clone(),
                    imported: target,
                });
            }
        }
        _ => {}
    }
    out
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
    fn words_and_type_checking_tests() {
        assert!(super::contains_word("a = xr.x", "xr"));
        assert!(!super::contains_word("a = xrx + x_xr", "xr"));
        assert!(super::in_package("torch_xla.runtime", "torch_xla"));
        assert!(!super::in_package("torch_xlab", "torch_xla"));
    }
}

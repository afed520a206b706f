//! The imports part of the module summary: every `import` / `from … import …` statement of the
//! file, found by walking statements only (never expressions), with the condition under which it
//! executes.
//!
//! Rules and the importer ask these questions instead of searching the text: "does the file import
//! `torch_xla` unconditionally?", "which local name refers to `torch_xla.core.xla_model`?", "where
//! is the first `torch_xla` import, and is it guarded?". A safe fix that adds an import must put it
//! under the same guard as its neighbours, so the condition is part of every record.

use crate::kind;
use std::sync::Arc;
use tree_sitter::Node;

use crate::source::TextRange;
use crate::syntax::{MAX_EXPR_DEPTH, NodeExt, node_text};

/// Under what condition an import statement executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportCondition {
    /// At module level (or in a class body, `with` or loop at module level): whenever the file
    /// is imported.
    Unconditional,
    /// In the body (or `else:`) of a `try:` that has an `except` clause, typically
    /// `except ImportError:`: the import may fail and the file still loads.
    TryExcept,
    /// In an `except …:` handler: a fallback that runs only when the `try` failed.
    ExceptHandler,
    /// Under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): never executes at run time.
    TypeChecking,
    /// Under an availability test such as `if is_torch_xla_available():` or
    /// `if importlib.util.find_spec("torch_xla"):`.
    Availability,
    /// Under any other `if` / `elif` / `else`.
    OtherIf,
    /// In a function body (and under no narrower guard there): runs when the function is called.
    InFunction,
}

impl ImportCondition {
    pub fn as_str(self) -> &'static str {
        match self {
            ImportCondition::Unconditional => "unconditional",
            ImportCondition::TryExcept => "try-except",
            ImportCondition::ExceptHandler => "except-handler",
            ImportCondition::TypeChecking => "type-checking",
            ImportCondition::Availability => "availability-check",
            ImportCondition::OtherIf => "if",
            ImportCondition::InFunction => "in-function",
        }
    }
}

/// One name bound by an import statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImportRecord {
    /// The local name bound: `xm` for `import torch_xla.core.xla_model as xm`, `torch_xla` for
    /// `import torch_xla.core.xla_model`, `nn` for `from torch import nn`.
    pub local: String,
    /// What the local name refers to: `torch_xla.core.xla_model`, `torch_xla`, `torch.nn`.
    pub qualified: String,
    /// The module the statement names: `torch_xla.core.xla_model` for both `import` forms above,
    /// `torch` for `from torch import nn`.
    pub module: String,
    /// `from module import member`: the member's name (`nn`); `None` for `import module`.
    pub member: Option<String>,
    /// The whole import statement.
    pub statement: TextRange,
    /// The innermost condition the statement executes under.
    pub condition: ImportCondition,
    /// Whether the statement is inside a function body (at any depth).
    pub in_function: bool,
    /// Whether an `if TYPE_CHECKING:` encloses it at any depth (it never runs, whatever the
    /// innermost condition says).
    pub type_checking: bool,
    /// The statement that makes it conditional (the `if` / `try` statement or the function
    /// definition of the innermost condition); `None` when unconditional.
    pub guard: Option<TextRange>,
}

impl ImportRecord {
    /// Whether the import runs whenever the file is imported.
    pub fn is_unconditional(&self) -> bool {
        self.condition == ImportCondition::Unconditional
    }

    /// Whether this import brings in `package` or one of its submodules
    /// (`torch_xla` matches `torch_xla`, `torch_xla.core.xla_model`, not `torch_xla_extras`).
    pub fn names_package(&self, package: &str) -> bool {
        is_under(&self.module, package) || is_under(&self.qualified, package)
    }
}

/// Whether dotted `name` is `package` or inside it.
fn is_under(name: &str, package: &str) -> bool {
    name.strip_prefix(package)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Every import of a file, in source order. Relative imports (`from . import x`) and wildcard
/// imports name project modules or nothing bindable and are not recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ModuleImports {
    records: Vec<ImportRecord>,
}

impl ModuleImports {
    /// Collects the imports of the file whose `module` node is `root`, walking statements only.
    pub fn build(root: Node<'_>, source: &str) -> ModuleImports {
        let mut collector = Collector::new(source);
        let outer = Guard::OUTER;
        collector.block(root, outer, 0);
        ModuleImports {
            records: collector.records,
        }
    }

    /// All records in source order.
    /// The records of one top-level statement, offsets relative to its start: [`Self::build`]
    /// is these, shifted, in statement order ([`Self::from_statements`]).
    pub(crate) fn statement_records(statement: Node<'_>, source: &str) -> Vec<ImportRecord> {
        let mut collector = Collector::new(source);
        let outer = Guard::OUTER;
        collector.statement(statement, outer, 1);
        collector.records_from(statement.start_byte())
    }

    /// [`Self::statement_records`], with the records of a top-level class's methods (the
    /// functions, decorated or not, directly in its body) taken from `known` by their key
    /// ([`crate::hash::text_key`] of the method's kind and text, flagged for a decorated class)
    /// when there, and the ones collected added to `kept`: offsets relative to the method's
    /// start. What the walk records inside a method follows from the method's subtree alone:
    /// the guard it walks the method under is the module's unconditional one (a top-level class
    /// adds no condition), its depth is fixed by the class being decorated or not (the flag),
    /// and the method's own guard is the method. A keystroke in a method of a big class
    /// collects that method's imports, not the class's.
    pub(crate) fn statement_records_reusing(
        statement: Node<'_>,
        source: &str,
        known: &dyn Fn(u64) -> Option<Arc<Vec<ImportRecord>>>,
        kept: &mut crate::hash::HashMap<u64, Arc<Vec<ImportRecord>>>,
    ) -> Vec<ImportRecord> {
        let (class, depth) = match statement.kind_key() {
            kind::CLASS_DEFINITION => (statement, 1),
            kind::DECORATED_DEFINITION => match statement.field("definition") {
                Some(definition) if definition.is(kind::CLASS_DEFINITION) => (definition, 2),
                _ => return Self::statement_records(statement, source),
            },
            _ => return Self::statement_records(statement, source),
        };
        let Some(body) = class.field("body").filter(|_| !statement.has_error()) else {
            return Self::statement_records(statement, source);
        };
        let mut collector = Collector::new(source);
        let outer = Guard::OUTER;
        // As `Collector::statement` of the class, then `Collector::block` of its body.
        for child in body.named_nodes() {
            let method =
                child.is(kind::FUNCTION_DEFINITION) || child.is(kind::DECORATED_DEFINITION);
            if !method || child.has_error() {
                collector.statement(child, outer, depth + 1);
                continue;
            }
            let base = child.start_byte();
            let key = crate::hash::text_key(child.kind_id(), node_text(child, source), depth == 2);
            let part = match known(key) {
                Some(part) => part,
                None => {
                    let first = collector.records.len();
                    collector.statement(child, outer, depth + 1);
                    let mut part = collector.records.split_off(first);
                    for record in &mut part {
                        rebase(record, base, false);
                    }
                    Arc::new(part)
                }
            };
            collector.records.extend(part.iter().map(|record| {
                let mut record = record.clone();
                rebase(&mut record, base, true);
                record
            }));
            kept.insert(key, part);
        }
        collector.records_from(statement.start_byte())
    }

    /// The module's imports from its statements' [`Self::statement_records`] and starts.
    pub(crate) fn from_statements<'a>(
        statements: impl Iterator<Item = (usize, &'a [ImportRecord])>,
    ) -> ModuleImports {
        let mut records = Vec::new();
        for (base, part) in statements {
            records.extend(part.iter().map(|record| {
                ImportRecord {
                    statement: record.statement.start + base..record.statement.end + base,
                    guard: record
                        .guard
                        .as_ref()
                        .map(|guard| guard.start + base..guard.end + base),
                    ..record.clone()
                }
            }));
        }
        ModuleImports { records }
    }

    pub fn records(&self) -> &[ImportRecord] {
        &self.records
    }

    /// Records of imports bringing in `package` or its submodules, in source order.
    pub fn of_package<'a>(&'a self, package: &'a str) -> impl Iterator<Item = &'a ImportRecord> {
        self.records
            .iter()
            .filter(move |record| record.names_package(package))
    }

    /// The first import (in source order, any condition) of `package` or its submodules: where
    /// an importer puts a new import of the same package, under the same guard.
    pub fn first_import_of<'a>(&'a self, package: &'a str) -> Option<&'a ImportRecord> {
        self.of_package(package).next()
    }

    /// Whether a statement that always runs at module level imports `package` (or a submodule).
    /// Files that import a backend only under `if is_torch_xla_available():` or `try:` serve
    /// several devices.
    pub fn imports_unconditionally(&self, package: &str) -> bool {
        self.of_package(package).any(ImportRecord::is_unconditional)
    }

    /// Whether any module-level import (any condition, not inside a function) brings in
    /// `package` or a submodule.
    pub fn imports_package(&self, package: &str) -> bool {
        self.of_package(package).any(|record| !record.in_function)
    }

    /// The expression that names `module` through the file's module-level imports (a reverse
    /// lookup over the records): `xm` after `import torch_xla.core.xla_model as xm`,
    /// `torch_xla.core.xla_model` after `import torch_xla.core.xla_model` or `import torch_xla`.
    /// An unconditional import is preferred over a guarded one; `None` when nothing names it.
    pub fn local_name_for(&self, module: &str) -> Option<String> {
        let module_level = || self.records.iter().filter(|record| !record.in_function);
        let best = |candidates: Vec<&ImportRecord>| {
            candidates
                .iter()
                .find(|record| record.is_unconditional())
                .or(candidates.first())
                .copied()
                .cloned()
        };
        let exact: Vec<&ImportRecord> = module_level()
            .filter(|record| record.qualified == module)
            .collect();
        if let Some(record) = best(exact) {
            return Some(record.local);
        }
        // `import torch_xla` (or `import torch_xla.x`) binds the package; the dotted path works.
        let root = module.split('.').next().unwrap_or(module);
        let rooted: Vec<&ImportRecord> = module_level()
            .filter(|record| {
                record.member.is_none() && record.local == root && record.qualified == root
            })
            .collect();
        best(rooted).map(|_| module.to_string())
    }

    /// The condition of the last module-level import that binds `local`, if an import does.
    pub fn condition_of(&self, local: &str) -> Option<ImportCondition> {
        self.records
            .iter()
            .rev()
            .find(|record| !record.in_function && record.local == local)
            .map(|record| record.condition)
    }
}

#[derive(Clone, Copy)]
struct Guard {
    condition: ImportCondition,
    in_function: bool,
    type_checking: bool,
    range: Option<(usize, usize)>,
}

impl Guard {
    /// The guard of the module's own statements: no condition.
    const OUTER: Guard = Guard {
        condition: ImportCondition::Unconditional,
        in_function: false,
        type_checking: false,
        range: None,
    };

    fn under(&self, condition: ImportCondition, node: Node<'_>) -> Guard {
        Guard {
            condition,
            in_function: self.in_function || condition == ImportCondition::InFunction,
            type_checking: self.type_checking || condition == ImportCondition::TypeChecking,
            range: Some((node.start_byte(), node.end_byte())),
        }
    }
}

/// Moves a record's offsets by `base`: forward (`up`), or back to be relative to it.
fn rebase(record: &mut ImportRecord, base: usize, up: bool) {
    let moved = |offset: usize| {
        if up {
            offset.saturating_add(base)
        } else {
            offset.saturating_sub(base)
        }
    };
    record.statement = moved(record.statement.start)..moved(record.statement.end);
    record.guard = record
        .guard
        .take()
        .map(|guard| moved(guard.start)..moved(guard.end));
}

struct Collector<'s> {
    source: &'s str,
    records: Vec<ImportRecord>,
}

impl<'s> Collector<'s> {
    fn new(source: &'s str) -> Self {
        Collector {
            source,
            records: Vec::new(),
        }
    }

    /// The records collected, offsets made relative to `base` (a statement's start).
    fn records_from(mut self, base: usize) -> Vec<ImportRecord> {
        for record in &mut self.records {
            rebase(record, base, false);
        }
        self.records
    }

    /// The statements of a block (or the module), in order.
    fn block(&mut self, block: Node<'_>, guard: Guard, depth: usize) {
        if depth > MAX_EXPR_DEPTH {
            return;
        }
        for statement in block.named_nodes() {
            self.statement(statement, guard, depth + 1);
        }
    }

    fn statement(&mut self, statement: Node<'_>, guard: Guard, depth: usize) {
        match statement.kind_key() {
            kind::IMPORT_STATEMENT => self.import(statement, guard),
            kind::IMPORT_FROM_STATEMENT => self.import_from(statement, guard),
            kind::IF_STATEMENT => {
                let condition = statement
                    .field("condition")
                    .map_or(ImportCondition::OtherIf, |c| self.classify(c));
                if let Some(body) = statement.field("consequence") {
                    self.block(body, guard.under(condition, statement), depth);
                }
                let mut cursor = statement.walk();
                for clause in statement.children_by_field_name("alternative", &mut cursor) {
                    let condition = match clause.kind_key() {
                        kind::ELIF_CLAUSE => clause
                            .field("condition")
                            .map_or(ImportCondition::OtherIf, |c| self.classify(c)),
                        _ => ImportCondition::OtherIf,
                    };
                    let body = clause.field("consequence").or_else(|| clause.field("body"));
                    if let Some(body) = body {
                        self.block(body, guard.under(condition, statement), depth);
                    }
                }
            }
            kind::TRY_STATEMENT => {
                let clauses: Vec<Node<'_>> = statement.named_nodes().collect();
                let has_handler = clauses
                    .iter()
                    .any(|c| c.is_any_kind(&["except_clause", "except_group_clause"]));
                let protected = if has_handler {
                    guard.under(ImportCondition::TryExcept, statement)
                } else {
                    guard
                };
                for clause in clauses {
                    match clause.kind_name() {
                        "block" => self.block(clause, protected, depth),
                        "else_clause" => {
                            if let Some(body) = clause.field("body") {
                                self.block(body, protected, depth);
                            }
                        }
                        "except_clause" | "except_group_clause" => {
                            let handler = guard.under(ImportCondition::ExceptHandler, statement);
                            for part in clause.named_nodes() {
                                if part.is(kind::BLOCK) {
                                    self.block(part, handler, depth);
                                }
                            }
                        }
                        "finally_clause" => {
                            for part in clause.named_nodes() {
                                if part.is(kind::BLOCK) {
                                    self.block(part, guard, depth);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            kind::FUNCTION_DEFINITION => {
                if let Some(body) = statement.field("body") {
                    self.block(
                        body,
                        guard.under(ImportCondition::InFunction, statement),
                        depth,
                    );
                }
            }
            kind::DECORATED_DEFINITION => {
                if let Some(definition) = statement.field("definition") {
                    self.statement(definition, guard, depth + 1);
                }
            }
            kind::CLASS_DEFINITION
            | kind::WITH_STATEMENT
            | kind::FOR_STATEMENT
            | kind::WHILE_STATEMENT => {
                if let Some(body) = statement.field("body") {
                    self.block(body, guard, depth);
                }
                if let Some(alternative) = statement.field("alternative")
                    && let Some(body) = alternative.field("body")
                {
                    self.block(body, guard, depth);
                }
            }
            _ => {}
        }
    }

    /// What an `if` condition tests, as far as imports are concerned.
    fn classify(&self, condition: Node<'_>) -> ImportCondition {
        let condition = crate::syntax::unparenthesize(condition);
        match condition.kind_key() {
            kind::IDENTIFIER | kind::ATTRIBUTE => {
                let text = node_text(condition, self.source);
                if text == "TYPE_CHECKING" || text.ends_with(".TYPE_CHECKING") {
                    return ImportCondition::TypeChecking;
                }
                ImportCondition::OtherIf
            }
            kind::CALL => {
                let name = condition
                    .field("function")
                    .map(|f| node_text(f, self.source))
                    .unwrap_or("");
                let last = name.rsplit('.').next().unwrap_or(name);
                if (last.starts_with("is_") && last.ends_with("_available")) || last == "find_spec"
                {
                    ImportCondition::Availability
                } else {
                    ImportCondition::OtherIf
                }
            }
            kind::NOT_OPERATOR => match condition.field("argument").map(|a| self.classify(a)) {
                Some(ImportCondition::Availability) => ImportCondition::Availability,
                _ => ImportCondition::OtherIf,
            },
            kind::BOOLEAN_OPERATOR => {
                let mut parts: Vec<ImportCondition> = Vec::new();
                for part in crate::syntax::named_children(condition) {
                    parts.push(self.classify(part));
                }
                if parts.contains(&ImportCondition::TypeChecking) {
                    ImportCondition::TypeChecking
                } else if parts.contains(&ImportCondition::Availability) {
                    ImportCondition::Availability
                } else {
                    ImportCondition::OtherIf
                }
            }
            _ => ImportCondition::OtherIf,
        }
    }

    fn push(
        &mut self,
        local: String,
        qualified: String,
        module: String,
        member: Option<String>,
        statement: Node<'_>,
        guard: Guard,
    ) {
        self.records.push(ImportRecord {
            local,
            qualified,
            module,
            member,
            statement: statement.start_byte()..statement.end_byte(),
            condition: guard.condition,
            in_function: guard.in_function,
            type_checking: guard.type_checking,
            guard: guard.range.map(|(start, end)| start..end),
        });
    }

    fn import(&mut self, statement: Node<'_>, guard: Guard) {
        let source = self.source;
        let mut cursor = statement.walk();
        for name in statement.children_by_field_name("name", &mut cursor) {
            match name.kind_key() {
                kind::DOTTED_NAME => {
                    let full = compact_dotted(node_text(name, source));
                    let first = full.split('.').next().unwrap_or("").to_string();
                    self.push(first.clone(), first, full, None, statement, guard);
                }
                kind::ALIASED_IMPORT => {
                    let (Some(module), Some(alias)) = (name.field("name"), name.field("alias"))
                    else {
                        continue;
                    };
                    let full = compact_dotted(node_text(module, source));
                    let local = node_text(alias, source).to_string();
                    self.push(local, full.clone(), full, None, statement, guard);
                }
                _ => {}
            }
        }
    }

    fn import_from(&mut self, statement: Node<'_>, guard: Guard) {
        let source = self.source;
        let Some(module) = statement.field("module_name") else {
            return;
        };
        if module.is_not(kind::DOTTED_NAME) {
            return; // relative imports name project modules, not torch
        }
        let module_name = compact_dotted(node_text(module, source));
        for (imported, local) in from_import_names(statement) {
            let member = compact_dotted(node_text(imported, source));
            self.push(
                node_text(local, source).to_string(),
                format!("{module_name}.{member}"),
                module_name.clone(),
                Some(member),
                statement,
                guard,
            );
        }
    }
}

/// The names a `from m import a, b as c` statement binds, as (imported, local) pairs: `(a, a)`,
/// `(b, c)`. One walk for the import records and the semantic index's bindings.
pub(crate) fn from_import_names<'t>(statement: Node<'t>) -> Vec<(Node<'t>, Node<'t>)> {
    let mut names = Vec::new();
    let mut cursor = statement.walk();
    for name in statement.children_by_field_name("name", &mut cursor) {
        match name.kind_key() {
            kind::DOTTED_NAME => names.push((name, name)),
            kind::ALIASED_IMPORT => {
                if let (Some(imported), Some(alias)) = (name.field("name"), name.field("alias")) {
                    names.push((imported, alias));
                }
            }
            _ => {}
        }
    }
    names
}

/// `torch . nn` → `torch.nn` (a dotted name may contain whitespace or line continuations).
pub(crate) fn compact_dotted(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '\\')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ModuleImports;
    use crate::hash::HashMap;
    use crate::syntax::NodeExt;

    /// Every top-level statement of the fixtures, examples and realistic files (and classes
    /// whose methods import under every condition, decorated or not): its records collected
    /// with no method known, then with every method's records reused from that first pass, are
    /// the records collected whole; the first pass keeps one part per method.
    #[test]
    fn methods_collected_apart_or_reused_give_the_class_s_records() {
        let mut files =
            crate::python_files_under(&["tests/fixtures", "examples", "tests/realistic"]);
        let classes = "import torch\n\n\nclass Model(torch.nn.Module):\n    \
            import os\n\n    def setup(self):\n        import torch_xla.core.xla_model as xm\n        \
            try:\n            import jax\n        except ImportError:\n            jax = None\n\n    \
            @staticmethod\n    def load():\n        if TYPE_CHECKING:\n            from a import b\n        \
            if is_torch_xla_available():\n            from torch_xla import runtime as xr\n\n    \
            def plain(self):\n        return 1\n\n    class Inner:\n        def f(self):\n            \
            import numpy\n\n\n@dataclass\nclass Config:\n    def g(self):\n        \
            from torch.utils.data import DataLoader\n        def nested():\n            \
            import math\n";
        files.push((std::path::PathBuf::from("classes"), classes.to_string()));
        let mut reused = 0;
        for (path, source) in files {
            let tree = crate::syntax::parse(&source, None).expect("parses");
            for statement in tree.root_node().named_nodes() {
                let whole = ModuleImports::statement_records(statement, &source);
                let mut kept = HashMap::default();
                let apart = ModuleImports::statement_records_reusing(
                    statement,
                    &source,
                    &|_| None,
                    &mut kept,
                );
                assert_eq!(
                    apart,
                    whole,
                    "{}: {}",
                    path.display(),
                    statement.start_byte()
                );
                let mut again = HashMap::default();
                let known = |key: u64| kept.get(&key).cloned();
                let from_parts = ModuleImports::statement_records_reusing(
                    statement, &source, &known, &mut again,
                );
                assert_eq!(
                    from_parts,
                    whole,
                    "{}: {}",
                    path.display(),
                    statement.start_byte()
                );
                assert_eq!(again.len(), kept.len());
                reused += kept.values().filter(|part| !part.is_empty()).count();
            }
        }
        assert!(reused >= 4, "{reused} methods' records reused");
    }
}

//! The imports part of the module summary: every `import` / `from … import …` statement of the
//! file, found by walking statements only (never expressions), with the condition under which it
//! executes.
//!
//! Rules and the importer ask these questions instead of searching the text: "does the file import
//! `torch_xla` unconditionally?", "which local name refers to `torch_xla.core.xla_model`?", "where
//! is the first `torch_xla` import, and is it guarded?". A safe fix that adds an import must put it
//! under the same guard as its neighbours, so the condition is part of every record.

use crate::kind;
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
        let mut collector = Collector {
            source,
            records: Vec::new(),
        };
        let outer = Guard {
            condition: ImportCondition::Unconditional,
            in_function: false,
            type_checking: false,
            range: None,
        };
        collector.block(root, outer, 0);
        ModuleImports {
            records: collector.records,
        }
    }

    /// All records in source order.
    /// The records of one top-level statement, offsets relative to its start: [`Self::build`]
    /// is these, shifted, in statement order ([`Self::from_statements`]).
    pub(crate) fn statement_records(statement: Node<'_>, source: &str) -> Vec<ImportRecord> {
        let mut collector = Collector {
            source,
            records: Vec::new(),
        };
        let outer = Guard {
            condition: ImportCondition::Unconditional,
            in_function: false,
            type_checking: false,
            range: None,
        };
        collector.statement(statement, outer, 1);
        let base = statement.start_byte();
        for record in &mut collector.records {
            record.statement = record.statement.start - base..record.statement.end - base;
            record.guard = record
                .guard
                .take()
                .map(|guard| guard.start - base..guard.end - base);
        }
        collector.records
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
    fn under(&self, condition: ImportCondition, node: Node<'_>) -> Guard {
        Guard {
            condition,
            in_function: self.in_function || condition == ImportCondition::InFunction,
            type_checking: self.type_checking || condition == ImportCondition::TypeChecking,
            range: Some((node.start_byte(), node.end_byte())),
        }
    }
}

struct Collector<'s> {
    source: &'s str,
    records: Vec<ImportRecord>,
}

impl Collector<'_> {
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

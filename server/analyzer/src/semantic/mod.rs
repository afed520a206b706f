//! The semantic index: imports and aliases, backend detection, scopes and bindings, tensor/device
//! facts that flow through assignments, and hot-path context.
//!
//! The checker drives it during its single traversal: [`SemanticModel::enter`] before a node's
//! rules run, [`SemanticModel::leave`] after its subtree. So a rule looking at a node sees every
//! binding made by earlier statements of the same function, and the frames (function, class,
//! loop) that enclose it. A cheap pre-pass over module-level statements resolves imports first,
//! because imports usually come first and rules need them from the first line on.

use crate::hash::{HashMap, StringSet};
use crate::kind;
use crate::word_list::{WordList, word_list};
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use crate::settings::BackendSetting;
use crate::source::TextRange;
use crate::syntax::{self, MAX_EXPR_DEPTH, NodeExt, node_text};
use crate::torch_api;

mod backward_flow;
mod decode_feedback;
mod digest;
mod facts;
mod guards;
mod imports;
mod passed;
mod roles;
pub(crate) mod summaries;

pub(crate) use digest::name_hash;
pub(crate) use digest::{ModuleEffects, PrepassChanges, PrepassDigest};
pub use facts::{Device, Evidence, Fact, ValueKind};
use guards::GuardFrame;
pub(crate) use guards::names_cuda_hardware;
pub use guards::{DeviceTest, Hardware, HardwareScope, device_test};
pub use roles::CodeRoles;
pub(crate) use roles::concerns_execution_cost;
pub use summaries::{FileFacts, FunctionSummary, LoopSummary};
use summaries::{ReturnFacts, Summaries};
pub(crate) use summaries::{StatementWalks, SummaryCache, WalkStep};

use imports::compact_dotted;
pub use imports::{ImportCondition, ImportRecord, ModuleImports};

/// The TPU software stack a file targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// PyTorch/XLA: device `"xla"`, lazy tensors, `torch_xla.sync()`.
    TorchXla,
    /// TorchTPU: device `"tpu"`, eager, `torch.compile(backend="tpu", dynamic=False)`.
    TorchTpu,
    /// Neither is visible: typically CUDA code being ported.
    Unknown,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::TorchXla => "torch_xla",
            Backend::TorchTpu => "torchtpu",
            Backend::Unknown => "unknown",
        }
    }

    /// Python expression for the TPU device in this backend.
    pub fn device_expr(self) -> &'static str {
        match self {
            Backend::TorchXla => "torch_xla.device()",
            Backend::TorchTpu => "torch.device(\"tpu\")",
            Backend::Unknown => "torch.accelerator.current_accelerator()",
        }
    }

    /// The device-type string (`"xla"` / `"tpu"`), when the backend is known.
    pub fn device_type(self) -> Option<&'static str> {
        match self {
            Backend::TorchXla => Some("xla"),
            Backend::TorchTpu => Some("tpu"),
            Backend::Unknown => None,
        }
    }
}

/// Why code runs once per training step (or per forward pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HotPath {
    /// Inside a module's `forward`.
    Forward,
    /// Inside a function named like a step (`train_step`, `training_step`, `*_step`).
    StepFunction,
    /// Inside a function compiled with `torch.compile` / `torch_xla.compile`.
    Compiled,
    /// Inside a loop over a data loader, or a loop that calls `backward()` / `optimizer.step()`.
    TrainingLoop,
    /// Inside such a loop over a data loader that neither calls `backward()`, steps an optimizer
    /// nor cuts the graph, itself or through a function of this file it calls: an evaluation
    /// or inference loop (or a training loop whose step is elsewhere). It runs every batch, but
    /// calling it "the training loop" would say more than the file does.
    BatchLoop,
    /// Inside such a loop that also feeds the model its own output (`LoopSummary::decodes`): a
    /// generation loop, every step one token.
    DecodeLoop,
    /// Inside a function of this file that a training loop or step function calls (directly or
    /// through other functions).
    CalledFromLoop,
    /// Anywhere else in an excerpt: a file without imports that reads as torch code (a snippet
    /// from a bug report or a forum, a cell copied alone), whose context, and so how often each
    /// line runs, is not there.
    Excerpt,
}

impl HotPath {
    pub fn describe(self) -> &'static str {
        match self {
            HotPath::Forward => "in `forward`",
            HotPath::StepFunction => "in a step function",
            HotPath::Compiled => "in a compiled function",
            HotPath::TrainingLoop => "in the training loop",
            HotPath::BatchLoop => "in a loop over batches",
            HotPath::DecodeLoop => "in the decode loop",
            HotPath::CalledFromLoop => "in a function called every step",
            HotPath::Excerpt => "in this excerpt",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Binding {
    /// An imported module or object, by qualified name.
    Import(String),
    Value(Fact),
    /// A class defined in this file; the index into `classes`.
    Class(usize),
    /// A function defined in this file; the index into `functions`.
    Function(usize),
}

/// What one function of the file returns, collected while its body is walked.
#[derive(Debug, Clone, PartialEq)]
struct FunctionReturns {
    /// The class it is a method of (directly), by index into `classes`.
    class: Option<usize>,
    name: String,
    returns: ReturnFacts,
    /// Its whole body has been walked.
    complete: bool,
}

/// Values by name: a list, and positions in it by [`name_hash`](digest::name_hash) in a
/// `HashMap<u64, usize>` (the map type of the summaries' node positions) rather than a
/// `HashMap<String, T>`, whose own table code would cost the WebAssembly module room for each
/// `T`. Exact: a position found is checked against the name, and two names of one hash fall back
/// to a scan. Equality ignores order, as a hash map's does.
#[derive(Debug, Clone)]
pub(crate) struct ByName<T> {
    entries: Vec<(String, T)>,
    positions: HashMap<u64, usize>,
}

impl<T> Default for ByName<T> {
    fn default() -> Self {
        ByName {
            entries: Vec::new(),
            positions: HashMap::default(),
        }
    }
}

impl<T> ByName<T> {
    /// The position of `name`, whose hash is `hash`; and whether a name of that hash is there.
    fn position(&self, name: &str, hash: u64) -> (Option<usize>, bool) {
        match self.positions.get(&hash) {
            Some(&first) if self.entries[first].0 == name => (Some(first), true),
            Some(_) => (
                self.entries.iter().position(|(other, _)| other == name),
                true,
            ),
            None => (None, false),
        }
    }

    /// Sets the value of `name` (keeping the name's place if it has one).
    fn insert(&mut self, name: String, value: T) {
        let hash = digest::name_hash(&name);
        match self.position(&name, hash) {
            (Some(position), _) => self.entries[position].1 = value,
            (None, hash_known) => {
                if !hash_known {
                    self.positions.insert(hash, self.entries.len());
                }
                self.entries.push((name, value));
            }
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&T> {
        let position = self.position(name, digest::name_hash(name)).0?;
        Some(&self.entries[position].1)
    }

    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &T)> {
        self.entries.iter().map(|(name, value)| (name, value))
    }
}

/// The file's function indices (or any indices) by name, the names in the order they first came.
impl ByName<Vec<usize>> {
    /// Adds `index` to the list of `name`.
    pub(crate) fn push(&mut self, name: &str, index: usize) {
        let hash = digest::name_hash(name);
        let position = match self.position(name, hash) {
            (Some(position), _) => position,
            (None, hash_known) => {
                if !hash_known {
                    self.positions.insert(hash, self.entries.len());
                }
                self.entries.push((name.to_string(), Vec::new()));
                self.entries.len() - 1
            }
        };
        self.entries[position].1.push(index);
    }

    /// The indices of `name` (none when it has none): a slice to loop over, where `get`'s
    /// option flattened into the loop instantiated the `Flatten` adapter at each site.
    pub(crate) fn indices(&self, name: &str) -> &[usize] {
        self.get(name).map_or(&[], Vec::as_slice)
    }
}

impl<T: PartialEq> PartialEq for ByName<T> {
    fn eq(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .all(|(name, value)| other.get(name) == Some(value))
    }
}

#[derive(Debug, Default)]
struct Scope {
    bindings: ByName<Binding>,
    /// For each name assigned something other than `None` in this scope: whether every such
    /// value so far needs CUDA (a `torch.cuda.*` object such as `torch.cuda.Stream()`, or any
    /// value assigned in CUDA-only code). `if stream is not None:` then runs only with CUDA.
    cuda_values: CudaValues,
}

/// Names by whether the values assigned to them need CUDA ([`Scope::cuda_values`]). Two sets of
/// names rather than a map to a flag: the set type is one the engine already has, so the
/// WebAssembly module carries one hash-table type fewer.
#[derive(Debug, Default)]
struct CudaValues {
    /// Names assigned at least one value that needs CUDA.
    needing: StringSet,
    /// Names assigned at least one value that does not.
    not_needing: StringSet,
}

impl CudaValues {
    fn record(&mut self, name: String, cuda: bool) {
        if cuda {
            self.needing.insert(name);
        } else {
            self.not_needing.insert(name);
        }
    }

    /// Whether `name` was assigned values and every one of them needs CUDA.
    fn all_need_cuda(&self, name: &str) -> bool {
        self.needing.contains(name) && !self.not_needing.contains(name)
    }
}

#[derive(Debug, Clone, PartialEq)]
struct ClassInfo {
    is_module: bool,
    /// An optimizer or scheduler subclass by the text of its bases (its `step` is not a
    /// training step, unless `is_optimizer`).
    is_optimizer_like: bool,
    /// A subclass of `torch.optim.Optimizer` (resolved through the imports, or through another
    /// such class of the file): its `step` updates every parameter once per training step, so
    /// it is as hot as a module's `forward`. A scheduler's `step` stays cold.
    is_optimizer: bool,
    /// Facts about `self.<name>` assigned in the class body's methods.
    attributes: ByName<Fact>,
    /// A `torch.nn.Module` subclass posted without its constructor: it derives from
    /// `torch.nn.Module` itself (no class of the file or library base that could set
    /// attributes) and defines no `__init__`. Its `self.<name>(h)` calls can only be submodules
    /// assigned in code that is not there (a bug report's excerpt).
    module_without_constructor: bool,
    /// A method of the class hands objects to a training launcher that places them
    /// (`self.accelerator.prepare(self.model, ...)`; `FunctionSummary::places_through_launcher`):
    /// a trainer. Its members are placed by the launcher and nothing places the trainer, so a
    /// buffer it registers from a host tensor (`self.register_buffer("step", torch.tensor(0))`)
    /// stays on the host.
    places_through_launcher: bool,
}

#[derive(Debug)]
enum Frame {
    Function {
        name: String,
        hot: Option<HotPath>,
        class: Option<usize>,
        /// `with torch.no_grad()` / `inference_mode` decorators (for compile rules).
        node_id: usize,
        /// The index into `functions`.
        id: usize,
        /// The index of its summary (`Summaries::functions`).
        summary: Option<usize>,
    },
    Class(usize),
    Loop {
        hot: bool,
        node_id: usize,
        /// An epoch loop: its body holds a training loop or a loop over a data loader, or calls
        /// a function of the file that runs its own step loop, so what it does itself runs once
        /// per epoch (or per call of that function).
        outer: bool,
        /// A decode loop (`LoopSummary::decodes`): hot, it is a generation loop, not training.
        decodes: bool,
        /// The loop calls `backward()`, steps an optimizer or cuts the graph, itself (or, for
        /// the first two, through a function of this file it calls): hot, it is a training
        /// loop, not only a loop over batches.
        trains: bool,
    },
}

/// Functions, classes and loops around the current node, innermost last.
#[derive(Debug, Clone, Copy)]
pub struct FunctionContext<'a> {
    pub name: &'a str,
    pub is_method_of_module: bool,
}

/// The index for one file. See the module docs for how it is driven.
pub struct SemanticModel<'t> {
    source: &'t str,
    /// Named nodes from the root to the current node, maintained by `enter`/`leave`.
    /// `Node::parent` is linear in the number of siblings on the path from the root
    /// (quadratic over a large flat module), so parents come from this stack instead.
    ancestors: Vec<Node<'t>>,
    backend: Backend,
    /// Import statements of a TPU backend inside function bodies that name another backend than
    /// the file's (`def bench_xla(): import torch_xla` in a file whose other functions use
    /// `torch.device("tpu")`), with the backend each names: code in a function around one of
    /// them targets that backend. Empty when the backend is configured.
    function_backends: Vec<(std::ops::Range<usize>, Backend)>,
    imported_modules: StringSet,
    scopes: Vec<Scope>,
    frames: Vec<Frame>,
    classes: Vec<ClassInfo>,
    compiled_names: StringSet,
    /// Every import statement of the file with its condition (part of the module summary).
    imports: ModuleImports,
    /// The hardware scope of each enclosing block and definition, innermost last (computed once
    /// per block in `enter`).
    guard_frames: Vec<GuardFrame>,
    /// Whether the file uses a test framework (so `test_*` functions are tests).
    test_framework: bool,
    /// Whether the file is a library module (see [`roles::is_library_module`]).
    library_module: bool,
    /// Whether the file is a fragment: it has no import statement at all (a bug report's
    /// snippet, a cell copied alone; see `bind_module_imports`).
    fragment: bool,
    /// A fragment that reads as torch code (`roles::reads_like_torch_code`): an excerpt, whose
    /// free names are the device values of the code it was cut from and whose code runs on the
    /// TPU (`HotPath::Excerpt`).
    excerpt: bool,
    /// Function and loop summaries and file facts from the pre-pass.
    summaries: Summaries,
    /// What each function met so far returns, by the id its binding carries.
    functions: Vec<FunctionReturns>,
    /// Answers to whole-file questions rules ask at many nodes (see [`Self::file_memo`]).
    file_memo: RefCell<Vec<((&'static str, &'static str), bool)>>,
    /// The plain assignments of each function (or module) body that
    /// [`Self::last_assignment_before`] was asked about, by the body's node id: one walk per
    /// body, kept as positions (a node kept in a cell would tie the model's lifetime).
    assignment_records: RefCell<Vec<(usize, Option<BodyAssignments>)>>,
    /// The last expression resolved by [`Self::qualified_name`], with its answer. Bindings
    /// change only in `enter`/`leave`, which clear it.
    qualified_name_memo: RefCell<Option<(usize, Option<String>)>>,
    /// Hashes of the names bound in module scope, in binding order (for incremental checking:
    /// which names a statement defines for the statements after it).
    module_binds: Vec<u64>,
    /// Whether the file is a checkpoint converter (its path says so): a one-off offline script.
    converter: bool,
    /// Every change to the module scope during the traversal, in order (for incremental
    /// checking: what a top-level statement does to the index, replayed instead of walked).
    module_journal: Vec<digest::ModuleChange>,
}

/// One plain assignment `target = value` of a body, by position.
struct PlainAssignment {
    target: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
    value_kind: u16,
    /// Where the whole assignment ends: it counts only at positions past this.
    end: usize,
}

/// The plain assignments of one body, shared by the questions about it.
type BodyAssignments = Arc<[PlainAssignment]>;

/// How many nodes a search for assignments visits in one body before it gives up.
const ASSIGNMENT_WALK_BUDGET: usize = 20_000;

/// Pushes the children of `node` that may hold an assignment: nested functions, classes and
/// lambdas are other scopes, and expressions without assignments are skipped.
fn push_assignment_holders<'t>(node: Node<'t>, stack: &mut Vec<Node<'t>>) {
    for child in node.named_nodes() {
        let kind = child.kind_name();
        if matches!(kind, "function_definition" | "class_definition" | "lambda")
            || (EXPRESSIONS_WITHOUT_ASSIGNMENTS.contains(&kind) && !child.has_error())
        {
            continue;
        }
        stack.push(child);
    }
}

/// The node of kind `kind` spanning exactly `range` inside `scope`: the smallest named node
/// spanning it, or the first of its ancestors of that kind with the same range.
fn node_with_range<'t>(
    scope: Node<'t>,
    range: std::ops::Range<usize>,
    kind: u16,
) -> Option<Node<'t>> {
    let mut node = scope.named_descendant_for_byte_range(range.start, range.end)?;
    while node.kind_id() != kind {
        node = node
            .parent()
            .filter(|parent| parent.byte_range() == range)?;
    }
    (node.byte_range() == range).then_some(node)
}

/// Expression kinds that hold no `assignment` node when free of syntax errors: in the grammar,
/// assignments occur only in expression statements and on the right of other assignments.
/// [`SemanticModel::last_assignment_before`] does not descend into them.
const EXPRESSIONS_WITHOUT_ASSIGNMENTS: WordList = word_list![
    "call",
    "argument_list",
    "attribute",
    "identifier",
    "string",
    "concatenated_string",
    "integer",
    "float",
    "subscript",
    "binary_operator",
    "unary_operator",
    "comparison_operator",
    "boolean_operator",
    "not_operator",
    "list",
    "tuple",
    "dictionary",
    "set",
    "parenthesized_expression",
    "conditional_expression",
    "list_comprehension",
    "dictionary_comprehension",
    "set_comprehension",
    "generator_expression",
    "keyword_argument",
];

/// How [`SemanticModel::build`] runs the whole-file pre-pass (imports, then summaries).
trait Prepass {
    fn imports(&mut self, root: Node<'_>, source: &str) -> ModuleImports;
    fn summaries(&mut self, tree: &Tree, source: &str, model: &SemanticModel<'_>) -> Summaries;
}

/// The pre-pass of a full check: built from the tree, nothing kept; with `steps`, also every
/// named node in walk order for the traversal ([`SemanticModel::new_recording`]). One type for
/// both, so that the WebAssembly module carries one copy of [`SemanticModel::build`].
struct FreshPrepass<'t> {
    tree: &'t Tree,
    steps: Option<Vec<summaries::WalkStep<'t>>>,
}

impl Prepass for FreshPrepass<'_> {
    fn imports(&mut self, root: Node<'_>, source: &str) -> ModuleImports {
        ModuleImports::build(root, source)
    }

    fn summaries(&mut self, _tree: &Tree, source: &str, model: &SemanticModel<'_>) -> Summaries {
        summaries::build(self.tree, source, model, self.steps.as_mut())
    }
}

/// The pre-pass of an incremental check: each top-level statement's part reused from `caches`
/// when its text is unchanged, and the parts kept in `cache` for the next check.
struct ReusingPrepass<'c, 't> {
    caches: &'c [&'c SummaryCache],
    /// The module's statements (its named children: stepping from one to the next is a walk
    /// through tree-sitter's balanced tree of hidden repetition nodes, so they are listed once
    /// per check and shared).
    statements: &'c [Node<'t>],
    import_parts: crate::hash::HashMap<u64, Arc<Vec<ImportRecord>>>,
    /// The import records of the methods of the classes whose records were not reused.
    method_import_parts: crate::hash::HashMap<u64, Arc<Vec<ImportRecord>>>,
    cache: Option<SummaryCache>,
    /// The walks of the statements whose parts were not reused, for the traversal to replay.
    walks: StatementWalks<'t>,
}

impl Prepass for ReusingPrepass<'_, '_> {
    fn imports(&mut self, _root: Node<'_>, source: &str) -> ModuleImports {
        // By statement, reusing the records of statements of unchanged text.
        let mut parts: Vec<(usize, Arc<Vec<ImportRecord>>)> =
            Vec::with_capacity(self.statements.len());
        for &statement in self.statements {
            let key = (!statement.has_error()).then(|| {
                crate::hash::text_key(statement.kind_id(), node_text(statement, source), false)
            });
            let part = key
                .and_then(|key| {
                    self.caches
                        .iter()
                        .find_map(|cache| cache.import_parts.get(&key).cloned())
                })
                .unwrap_or_else(|| {
                    // A class typed in: its methods' records by method.
                    let known = |key: u64| {
                        self.caches
                            .iter()
                            .find_map(|cache| cache.method_import_parts.get(&key).cloned())
                    };
                    Arc::new(ModuleImports::statement_records_reusing(
                        statement,
                        source,
                        &known,
                        &mut self.method_import_parts,
                    ))
                });
            if let Some(key) = key {
                self.import_parts.insert(key, part.clone());
            }
            parts.push((statement.start_byte(), part));
        }
        ModuleImports::from_statements(parts.iter().map(|(base, part)| (*base, part.as_slice())))
    }

    fn summaries(&mut self, _tree: &Tree, source: &str, model: &SemanticModel<'_>) -> Summaries {
        // What the pre-pass resolves calls through: the module-level imports' bindings.
        let mut hasher = crate::hash::DigestHasher::default();
        for record in model.imports.records() {
            if !record.in_function {
                (&record.local, &record.qualified).hash(&mut hasher);
            }
        }
        let imports = hasher.finish();
        let (built, cache) = summaries::build_reusing(
            self.statements,
            source,
            model,
            imports,
            self.caches,
            true,
            Some(&mut self.walks),
        );
        self.cache = cache.map(|mut cache| {
            cache.import_parts = std::mem::take(&mut self.import_parts);
            cache.method_import_parts = std::mem::take(&mut self.method_import_parts);
            cache
        });
        built
    }
}

impl<'t> SemanticModel<'t> {
    /// Builds the module-level part of the index (imports, backend, compiled functions).
    pub fn new(source: &'t str, tree: &Tree, backend_setting: BackendSetting) -> Self {
        let mut prepass = FreshPrepass { tree, steps: None };
        Self::build(source, tree, backend_setting, &mut prepass, None)
    }

    /// [`Self::new`], also returning every named node of `tree` below the root in the order of
    /// a cursor walk, each with its depth among named nodes (top-level statements at 1), as the
    /// pre-pass met them: the checker replays them instead of walking the tree a second time.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn new_recording(
        source: &'t str,
        tree: &'t Tree,
        backend_setting: BackendSetting,
    ) -> (Self, Vec<summaries::WalkStep<'t>>) {
        let mut prepass = FreshPrepass {
            tree,
            steps: Some(Vec::new()),
        };
        let model = Self::build(source, tree, backend_setting, &mut prepass, None);
        (model, prepass.steps.unwrap_or_default())
    }

    /// [`Self::new`], reusing the pre-pass of unchanged top-level statements from `caches`
    /// (earlier checks of the same document) and returning what the next check can reuse. The
    /// index is the same as [`Self::new`]'s. `statements`: the root's named children. Also
    /// returns the walks of the statements whose pre-pass was not reused ([`StatementWalks`]).
    pub(crate) fn new_reusing<'s>(
        source: &'t str,
        tree: &Tree,
        backend_setting: BackendSetting,
        caches: &[&SummaryCache],
        statements: &[Node<'s>],
    ) -> (Self, SummaryCache, StatementWalks<'s>) {
        let mut prepass = ReusingPrepass {
            caches,
            statements,
            import_parts: crate::hash::HashMap::default(),
            method_import_parts: crate::hash::HashMap::default(),
            cache: None,
            walks: StatementWalks::default(),
        };
        let model = Self::build(
            source,
            tree,
            backend_setting,
            &mut prepass,
            Some(statements),
        );
        (model, prepass.cache.unwrap_or_default(), prepass.walks)
    }

    /// Generic over the pre-pass so that a full check's code ([`FreshPrepass`]) does not link
    /// the reusing one (the WebAssembly playground checks in full only: its size budget).
    /// `statements`: the root's named children, when listed already.
    fn build(
        source: &'t str,
        tree: &Tree,
        backend_setting: BackendSetting,
        prepass: &mut impl Prepass,
        statements: Option<&[Node<'_>]>,
    ) -> Self {
        let mut model = SemanticModel {
            source,
            ancestors: Vec::new(),
            backend: Backend::Unknown,
            function_backends: Vec::new(),
            imported_modules: StringSet::default(),
            scopes: vec![Scope::default()],
            frames: Vec::new(),
            classes: Vec::new(),
            compiled_names: StringSet::default(),
            imports: ModuleImports::default(),
            guard_frames: vec![GuardFrame {
                node_id: tree.root_node().id(),
                scope: HardwareScope::default(),
                test_code: false,
                cold: false,
                errors_only: false,
                load_time: false,
                once_per_run: false,
                host_data: false,
            }],
            test_framework: false,
            library_module: false,
            fragment: false,
            excerpt: false,
            summaries: Summaries::default(),
            functions: Vec::new(),
            file_memo: RefCell::new(Vec::new()),
            assignment_records: RefCell::new(Vec::new()),
            qualified_name_memo: RefCell::new(None),
            module_binds: Vec::new(),
            converter: false,
            module_journal: Vec::new(),
        };
        model.imports = prepass.imports(tree.root_node(), source);
        // Relative imports (`from ..basics import *`) make no import record but show a module
        // of a package, not a fragment.
        model.fragment = model.imports.records().is_empty()
            && !tree.root_node().named_nodes().any(|statement| {
                statement.is_any(&[
                    kind::IMPORT_STATEMENT,
                    kind::IMPORT_FROM_STATEMENT,
                    kind::FUTURE_IMPORT_STATEMENT,
                ])
            });
        model.excerpt = model.fragment && roles::reads_like_torch_code(source);
        model.bind_module_imports();
        // The journal records the traversal's changes; the imports above belong to the pre-pass.
        model.module_journal.clear();
        let root = tree.root_node();
        model.test_framework = match statements {
            Some(statements) => {
                roles::uses_test_framework(&model.imports, root, statements, source)
            }
            None => roles::uses_test_framework(
                &model.imports,
                root,
                &syntax::named_children(root),
                source,
            ),
        };
        // A fragment (no imports at all, see `bind_module_imports`) is never an importable
        // library module: it is code a user runs.
        model.library_module =
            !model.fragment && roles::is_library_module(tree.root_node(), source);
        model.summaries = prepass.summaries(tree, source, &model);
        model.compiled_names = std::mem::take(&mut model.summaries.compiled_names);
        model.backend = match backend_setting {
            BackendSetting::TorchXla => Backend::TorchXla,
            BackendSetting::TorchTpu => Backend::TorchTpu,
            BackendSetting::Auto => model.detect_backend(),
        };
        if backend_setting == BackendSetting::Auto {
            model.function_backends = model.function_local_backends();
        }
        model
    }

    /// The imports of `torch_xla` / `torch_tpu` inside function bodies (not under `if
    /// TYPE_CHECKING:`) that name a backend other than the file's (see `function_backends`).
    fn function_local_backends(&self) -> Vec<(std::ops::Range<usize>, Backend)> {
        self.imports
            .records()
            .iter()
            .filter(|record| record.in_function && !record.type_checking)
            .filter_map(|record| {
                let backend = if record.names_package("torch_xla") {
                    Backend::TorchXla
                } else if record.names_package("torch_tpu") {
                    Backend::TorchTpu
                } else {
                    return None;
                };
                (backend != self.backend).then(|| (record.statement.clone(), backend))
            })
            .collect()
    }

    pub fn source(&self) -> &'t str {
        self.source
    }

    /// The file's imports with the condition each executes under (see [`ModuleImports`]).
    pub fn imports(&self) -> &ModuleImports {
        &self.imports
    }

    /// The answer to a question about the whole file that does not change during the traversal
    /// (`key` names the question and its argument), computed on first use. Rules that ask such
    /// a question at every call node would otherwise rescan the file each time.
    pub fn file_memo(
        &self,
        key: (&'static str, &'static str),
        compute: impl FnOnce() -> bool,
    ) -> bool {
        if let Some(&(_, answer)) = self.file_memo.borrow().iter().find(|(k, _)| *k == key) {
            return answer;
        }
        let answer = compute();
        self.file_memo.borrow_mut().push((key, answer));
        answer
    }

    /// The backend the code at the traversal's current node targets: the file's (configured, or
    /// detected from its imports and device strings), or, inside a function that imports
    /// another backend itself (`def bench_xla(index): import torch_xla`, in a script whose other
    /// functions run TorchTPU or CUDA), that backend.
    pub fn backend(&self) -> Backend {
        if self.function_backends.is_empty() {
            return self.backend;
        }
        self.ancestors
            .iter()
            .rev()
            .filter(|ancestor| ancestor.is(kind::FUNCTION_DEFINITION))
            .find_map(|function| {
                let range = function.byte_range();
                self.function_backends
                    .iter()
                    .find(|(statement, _)| {
                        range.start <= statement.start && statement.end <= range.end
                    })
                    .map(|(_, backend)| *backend)
            })
            .unwrap_or(self.backend)
    }

    /// Whether any module with this qualified prefix is imported anywhere at module level
    /// (e.g. `"torch"` or `"torch_xla"`).
    pub fn imports_module(&self, prefix: &str) -> bool {
        self.imported_modules
            .iter()
            .any(|m| m == prefix || m.starts_with(prefix) && m[prefix.len()..].starts_with('.'))
    }

    // ----- pre-pass -------------------------------------------------------------------------

    /// Binds the names of every import outside functions in module scope, in source order
    /// (imports under `if` / `try` included: rules need them from the first line on). Imports in
    /// functions bind when the traversal reaches them.
    fn bind_module_imports(&mut self) {
        let records: Vec<(String, String, String)> = self
            .imports
            .records()
            .iter()
            .filter(|record| !record.in_function)
            .map(|record| {
                (
                    record.local.clone(),
                    record.qualified.clone(),
                    record.module.clone(),
                )
            })
            .collect();
        for (local, qualified, module) in records {
            self.imported_modules.insert(module);
            self.imported_modules.insert(qualified.clone());
            self.bind(local, Binding::Import(qualified));
        }
        // A file that imports nothing is a fragment (a bug report's snippet, a cell copied
        // alone): its `torch.nonzero`, `F.relu` and `xm.mark_step` mean what they conventionally
        // do. Only names are bound (and `torch` counts as imported, so torch-only rules run);
        // no module is recorded as imported, so the backend still comes from the code's device
        // strings, and the fix importer, which reads the import records, still adds what a fix
        // needs.
        if self.fragment {
            for &(local, qualified) in crate::torch_api::FRAGMENT_ALIASES {
                self.bind(local.to_string(), Binding::Import(qualified.to_string()));
            }
            self.imported_modules.insert("torch".to_string());
        }
    }

    fn detect_backend(&self) -> Backend {
        if self.imports_module("torch_xla") {
            return Backend::TorchXla;
        }
        if self.imports_module("torch_tpu") {
            return Backend::TorchTpu;
        }
        // Device strings in device positions only (`device="xla"`, `torch.device("tpu")`,
        // `.to("xla:0")`, `torch.compile(backend="openxla")`, Lightning's `accelerator="tpu"`,
        // which runs on PyTorch/XLA), never any text.
        let evidence = &self.summaries.file;
        if evidence.xla_evidence {
            return Backend::TorchXla;
        }
        if evidence.tpu_evidence {
            return Backend::TorchTpu;
        }
        Backend::Unknown
    }

    fn bind_import(&mut self, statement: Node<'_>) {
        let source = self.source;
        match statement.kind_key() {
            kind::IMPORT_STATEMENT => {
                let mut cursor = statement.walk();
                for name in statement.children_by_field_name("name", &mut cursor) {
                    match name.kind_key() {
                        kind::DOTTED_NAME => {
                            let full = node_text(name, source).to_string();
                            let first = full.split('.').next().unwrap_or("").trim().to_string();
                            self.imported_modules.insert(full);
                            self.bind(first.clone(), Binding::Import(first));
                        }
                        kind::ALIASED_IMPORT => {
                            let (Some(module), Some(alias)) =
                                (name.field("name"), name.field("alias"))
                            else {
                                continue;
                            };
                            let full = compact_dotted(node_text(module, source));
                            self.imported_modules.insert(full.clone());
                            self.bind(node_text(alias, source).to_string(), Binding::Import(full));
                        }
                        _ => {}
                    }
                }
            }
            kind::IMPORT_FROM_STATEMENT => {
                let Some(module) = statement.field("module_name") else {
                    return;
                };
                if module.is_not(kind::DOTTED_NAME) {
                    return; // relative imports name project modules, not torch
                }
                let module_name = compact_dotted(node_text(module, source));
                self.imported_modules.insert(module_name.clone());
                for (imported, local) in imports::from_import_names(statement) {
                    let qualified = format!(
                        "{module_name}.{}",
                        compact_dotted(node_text(imported, source))
                    );
                    self.imported_modules.insert(qualified.clone());
                    self.bind(
                        node_text(local, source).to_string(),
                        Binding::Import(qualified),
                    );
                }
            }
            _ => {}
        }
    }

    fn bind(&mut self, name: String, binding: Binding) {
        if self.scopes.len() == 1 {
            self.module_binds.push(digest::name_hash(&name));
            self.module_journal
                .push(digest::ModuleChange::Bind(name.clone(), binding.clone()));
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.bindings.insert(name, binding);
        }
    }

    /// The module node (the root of the traversal).
    fn module_node(&self) -> Option<Node<'t>> {
        self.ancestors.first().copied()
    }

    /// The innermost named node spanning exactly `start..end` (one descent from the module).
    fn node_at(&self, start: usize, end: usize) -> Option<Node<'t>> {
        self.module_node()?
            .named_descendant_for_byte_range(start, end)
            .filter(|n| n.start_byte() == start && n.end_byte() == end)
    }

    /// The innermost function definition strictly around `node`, walking down from the module
    /// (one child per level).
    fn function_containing(&self, node: Node<'t>) -> Option<Node<'t>> {
        let mut current = self.module_node()?;
        let mut function = None;
        for _ in 0..MAX_EXPR_DEPTH * 16 {
            if current.id() == node.id() {
                return function;
            }
            let next = current.child_with_descendant(node)?;
            if next.is(kind::FUNCTION_DEFINITION) && next.id() != node.id() {
                function = Some(next);
            }
            current = next;
        }
        function
    }

    /// The expression a bound value's fact came from (the named node at [`Fact::origin`]).
    pub fn origin_node(&self, origin: (usize, usize)) -> Option<Node<'t>> {
        self.node_at(origin.0, origin.1)
    }

    /// The function around the expression at `origin` (see [`Self::origin_node`]); `None` at
    /// module level or when no node spans the origin.
    pub fn origin_function(&self, origin: (usize, usize)) -> Option<Node<'t>> {
        let node = self.node_at(origin.0, origin.1)?;
        self.function_containing(node)
    }

    /// The function around `node` (`Some(None)` at module level).
    pub fn function_around(&self, node: Node<'t>) -> Option<Option<Node<'t>>> {
        // The current node and its ancestors: from the traversal's stack.
        if self.ancestors.last().is_some_and(|current| {
            current.start_byte() <= node.start_byte() && node.end_byte() <= current.end_byte()
        }) {
            return Some(
                self.ancestors
                    .iter()
                    .rev()
                    .find(|a| a.is(kind::FUNCTION_DEFINITION) && a.id() != node.id())
                    .copied(),
            );
        }
        self.module_node()?;
        Some(self.function_containing(node))
    }

    /// The value of the last plain assignment `name = value` that ends before `before`, in the
    /// body of `function` (the module when `None`), nested functions and classes excluded. A
    /// cheap stand-in for a reaching definition: branches are not distinguished.
    pub fn last_assignment_before(
        &self,
        function: Option<Node<'t>>,
        name: &str,
        before: usize,
    ) -> Option<Node<'t>> {
        let scope = match function {
            Some(function) => function,
            None => self.module_node()?,
        };
        // No mention of the name before `before` means no assignment to it: skip the walk.
        let text = self
            .source
            .get(scope.start_byte()..before.max(scope.start_byte()))
            .unwrap_or("");
        if !text.contains(name) {
            return None;
        }
        let Some(assignments) = self.plain_assignments(scope) else {
            return self.last_assignment_walk(scope, name, before);
        };
        let best = assignments
            .iter()
            .filter(|assignment| {
                assignment.end <= before && self.source.get(assignment.target.clone()) == Some(name)
            })
            .max_by_key(|assignment| assignment.value.start)?;
        node_with_range(scope, best.value.clone(), best.value_kind)
    }

    /// Every plain assignment `name = value` in `scope`'s body (nested functions and classes
    /// excluded), found by one walk and kept for the next question about the same body; `None`
    /// when the body is larger than the walk's budget, and [`Self::last_assignment_walk`]
    /// then answers question by question, as before these records existed.
    fn plain_assignments(&self, scope: Node<'t>) -> Option<BodyAssignments> {
        if let Some((_, assignments)) = self
            .assignment_records
            .borrow()
            .iter()
            .find(|(id, _)| *id == scope.id())
        {
            return assignments.clone();
        }
        let body = scope.field("body").unwrap_or(scope);
        let mut assignments = Vec::new();
        let mut stack = vec![body];
        let mut visited = 0usize;
        let mut complete = true;
        while let Some(node) = stack.pop() {
            visited += 1;
            // Within the budget here, the per-question walk (which enters fewer nodes) never
            // reaches it either, so the records answer exactly as that walk would.
            if visited > ASSIGNMENT_WALK_BUDGET {
                complete = false;
                break;
            }
            if node.is(kind::ASSIGNMENT)
                && let (Some(left), Some(right)) = (node.field("left"), node.field("right"))
                && left.is(kind::IDENTIFIER)
            {
                assignments.push(PlainAssignment {
                    target: left.byte_range(),
                    value: right.byte_range(),
                    value_kind: right.kind_id(),
                    end: node.end_byte(),
                });
            }
            push_assignment_holders(node, &mut stack);
        }
        let assignments: Option<BodyAssignments> = complete.then(|| assignments.into());
        self.assignment_records
            .borrow_mut()
            .push((scope.id(), assignments.clone()));
        assignments
    }

    /// [`Self::last_assignment_before`] by a walk of its own, for a body over the walk's
    /// budget: nodes that start after `before` are not entered, so it reaches further.
    fn last_assignment_walk(&self, scope: Node<'t>, name: &str, before: usize) -> Option<Node<'t>> {
        let body = scope.field("body").unwrap_or(scope);
        let mut best: Option<Node<'t>> = None;
        let mut stack = vec![body];
        let mut visited = 0usize;
        while let Some(node) = stack.pop() {
            visited += 1;
            if visited > ASSIGNMENT_WALK_BUDGET || node.start_byte() >= before {
                continue;
            }
            if node.is(kind::ASSIGNMENT)
                && let (Some(left), Some(right)) = (node.field("left"), node.field("right"))
                && left.is(kind::IDENTIFIER)
                && node_text(left, self.source) == name
                && node.end_byte() <= before
                && best.is_none_or(|b| b.start_byte() < right.start_byte())
            {
                best = Some(right);
            }
            push_assignment_holders(node, &mut stack);
        }
        best
    }

    /// The reads of `name` in the body of `function` that start after `after`, up to the next
    /// plain assignment to it (the reads on its right side included: `x = x.numpy()`), nested
    /// functions, classes and lambdas excluded; `None` when the body is larger than the walk's
    /// budget. A cheap stand-in for the uses of one definition, like
    /// [`Self::last_assignment_before`]: branches are not distinguished.
    pub fn reads_after(
        &self,
        function: Node<'t>,
        name: &str,
        after: usize,
    ) -> Option<Vec<Node<'t>>> {
        let body = function.field("body")?;
        let mut reads: Vec<Node<'t>> = Vec::new();
        // Where the name is bound again: the end of the first plain assignment to it after `after`.
        let mut rebound_at = usize::MAX;
        let mut stack = vec![body];
        let mut visited = 0usize;
        while let Some(node) = stack.pop() {
            visited += 1;
            if visited > ASSIGNMENT_WALK_BUDGET {
                return None;
            }
            if node.end_byte() <= after {
                continue;
            }
            match node.kind_key() {
                kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::LAMBDA => continue,
                kind::IDENTIFIER => {
                    if node.start_byte() >= after && node_text(node, self.source) == name {
                        reads.push(node);
                    }
                    continue;
                }
                // `obj.name`: the attribute is no read of a variable.
                kind::ATTRIBUTE => {
                    if let Some(object) = node.field("object") {
                        stack.push(object);
                    }
                    continue;
                }
                // `f(name=...)`: the keyword is no read either.
                kind::KEYWORD_ARGUMENT => {
                    if let Some(value) = node.field("value") {
                        stack.push(value);
                    }
                    continue;
                }
                kind::ASSIGNMENT => {
                    if let Some(left) = node.field("left")
                        && left.is(kind::IDENTIFIER)
                        && node_text(left, self.source) == name
                        && left.start_byte() >= after
                    {
                        rebound_at = rebound_at.min(node.end_byte());
                        if let Some(right) = node.field("right") {
                            stack.push(right);
                        }
                        continue;
                    }
                }
                _ => {}
            }
            stack.extend(node.named_nodes());
        }
        reads.retain(|read| read.start_byte() < rebound_at);
        Some(reads)
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        // Class scopes are not visible from methods; the innermost function scope and the
        // module scope cover what rules need.
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.bindings.get(name))
    }

    // ----- traversal hooks ----------------------------------------------------------------

    /// Called by the checker before the rules of `node` run.
    pub fn enter(&mut self, node: Node<'t>) {
        *self.qualified_name_memo.get_mut() = None;
        self.ancestors.push(node);
        match node.kind_key() {
            kind::BLOCK => self.enter_block(node),
            kind::LAMBDA => self.enter_lambda(node),
            kind::FUNCTION_DEFINITION => {
                self.enter_definition_guards(node);
                self.enter_function(node)
            }
            kind::CLASS_DEFINITION => {
                self.enter_definition_guards(node);
                self.enter_class(node)
            }
            kind::FOR_STATEMENT | kind::WHILE_STATEMENT => {
                let hot = self.is_training_loop(node);
                let summary = self.summaries.loop_summary(node);
                let outer = summary.is_some_and(|summary| {
                    summary.nested_training_loop
                        || summary.nested_loader_loop
                        || summary.calls_step_loop_owner
                });
                let decodes = summary.is_some_and(|summary| summary.decodes);
                // A loop that cuts the graph itself (`xm.mark_step()` per denoising step) is
                // hot for that reason, not for its batches: it keeps the training loop's words.
                let trains = summary.is_some_and(|summary| {
                    summary.calls_backward
                        || summary.steps_optimizer
                        || summary.syncs
                        || summary.calls.iter().any(|callee| {
                            self.summaries.functions.iter().any(|function| {
                                function.name == *callee
                                    && (function.calls_backward || function.steps_optimizer)
                            })
                        })
                });
                self.frames.push(Frame::Loop {
                    hot,
                    node_id: node.id(),
                    outer,
                    decodes,
                    trains,
                });
                self.bind_loop_target(node);
            }
            _ => {}
        }
    }

    /// `for row in t:` over a tensor binds `row` to a tensor on `t`'s device.
    fn bind_loop_target(&mut self, node: Node<'_>) {
        if node.is_not(kind::FOR_STATEMENT) {
            return;
        }
        let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
            return;
        };
        let fact = self.fact(right);
        let origin = Some((right.start_byte(), right.end_byte()));
        if left.is(kind::IDENTIFIER)
            && let Some(row) = self.parameter_group_row(right, origin)
        {
            self.bind(
                node_text(left, self.source).to_string(),
                Binding::Value(row),
            );
            return;
        }
        if left.is(kind::IDENTIFIER)
            && let Some(item) = self.module_sequence_item(fact)
        {
            self.bind(
                node_text(left, self.source).to_string(),
                Binding::Value(item),
            );
            return;
        }
        if fact.is_tensor() && left.is(kind::IDENTIFIER) {
            let row = Fact::tensor(fact.device, origin).with_evidence(fact.evidence);
            self.bind(
                node_text(left, self.source).to_string(),
                Binding::Value(row),
            );
            return;
        }
        // `for pred in predictions:` with `predictions = logits.argmax(1).cpu().numpy()`: each
        // row is a NumPy array or scalar on the host, whose `.item()` waits for nothing.
        if fact.kind == ValueKind::NumpyArray && left.is(kind::IDENTIFIER) {
            self.bind(
                node_text(left, self.source).to_string(),
                Binding::Value(Fact::of(ValueKind::NumpyArray)),
            );
            return;
        }
        // `for sentence, score in zip(batch, scores):` / `for i, row in enumerate(t):`: the
        // targets paired with a tensor hold its rows, on its device.
        if left.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN])
            && syntax::call_parts(syntax::unparenthesize(right)).is_some_and(|(function, _)| {
                matches!(node_text(function, self.source), "zip" | "enumerate")
            })
        {
            let targets: Vec<Node<'_>> = left
                .named_nodes()
                .filter(|target| target.is(kind::IDENTIFIER))
                .collect();
            let mut bound = false;
            for target in targets {
                let name = node_text(target, self.source);
                if let Some(row) = self.iteration_target_fact(left, right, name, 0)
                    && matches!(
                        row.kind,
                        ValueKind::Tensor | ValueKind::NumpyArray | ValueKind::Module
                    )
                {
                    self.bind(name.to_string(), Binding::Value(row));
                    bound = true;
                }
            }
            if bound {
                return;
            }
        }
        // `for name, weight in state.items():` / `for weight in state.values():` over state loaded
        // onto the host: the values are host tensors.
        if let Some((function, _)) = syntax::call_parts(syntax::unparenthesize(right))
            && function.is(kind::ATTRIBUTE)
            && let (Some(object), Some(method)) =
                (function.field("object"), function.field("attribute"))
            && self.fact(object).kind == ValueKind::Container
            && self.fact(object).device == Device::Cpu
        {
            let value = match (node_text(method, self.source), left.kind_name()) {
                ("items", "pattern_list" | "tuple_pattern") if left.named_child_count() == 2 => {
                    left.named_child(1)
                }
                ("values", "identifier") => Some(left),
                _ => None,
            };
            if let Some(value) = value.filter(|v| v.is(kind::IDENTIFIER)) {
                self.bind(
                    node_text(value, self.source).to_string(),
                    Binding::Value(Fact::tensor(Device::Cpu, origin)),
                );
            }
            return;
        }
        // `for images, labels in loader:` / `for step, batch in enumerate(loader):` over a device
        // loader (`MpDeviceLoader`): the batch's tensors are on the device.
        let enumerated = syntax::call_parts(syntax::unparenthesize(right))
            .filter(|(function, _)| syntax::text_is(*function, self.source, "enumerate"))
            .and_then(|(_, arguments)| syntax::positional_args(arguments).first().copied());
        let (loader, target) = match enumerated {
            Some(inner) => {
                let target = match left.kind_key() {
                    kind::PATTERN_LIST | kind::TUPLE_PATTERN if left.named_child_count() == 2 => {
                        left.named_child(1)
                    }
                    _ => None,
                };
                (self.fact(inner), target)
            }
            None => (fact, Some(left)),
        };
        let Some(target) = target else {
            return;
        };
        // Only a device loader's batches are known to be tensors on the device; a plain loader
        // yields whatever the collate function builds (dicts, strings, host tensors).
        if loader.kind != ValueKind::DataLoader || loader.device != Device::Accelerator {
            if loader.kind == ValueKind::DataLoader {
                self.forget_stale_tensors(target, origin);
            }
            return;
        }
        let batch = Fact::tensor(loader.device, origin);
        self.bind_batch(target, batch);
    }

    /// A loop over a plain `DataLoader` rebinds its target names to whatever the collate
    /// function builds: a name that held a tensor (`yb = yb.to(device)` in the training loop
    /// above `for xb, yb in test_dl:`) holds a batch of unknown kind now, not that device tensor.
    /// Only tensor bindings are dropped, and only for a known loader: over other iterables a
    /// stale row binding is often the same kind of value (`for target in targets:` twice).
    fn forget_stale_tensors(&mut self, target: Node<'_>, origin: Option<(usize, usize)>) {
        for node in syntax::target_names(target, true) {
            let name = node_text(node, self.source);
            if !matches!(self.lookup(name), Some(Binding::Value(fact)) if fact.is_tensor()) {
                continue;
            }
            self.bind(
                name.to_string(),
                Binding::Value(Fact {
                    origin,
                    ..Fact::UNKNOWN
                }),
            );
        }
    }

    /// An item of a module sequence (`nn.ModuleList`, `nn.Sequential`; the fact's origin is its
    /// constructor): a module where the sequence is. `for block in self.blocks: h = block(h)`
    /// calls a submodule as `self.block(h)` would. The item keeps no origin: the constructor's
    /// arguments describe the sequence, not the item.
    fn module_sequence_item(&self, sequence: Fact) -> Option<Fact> {
        if sequence.kind != ValueKind::Module {
            return None;
        }
        let (start, end) = sequence.origin?;
        let constructor = self.node_at(start, end).filter(|n| n.is(kind::CALL))?;
        let qualified = self.call_qualified_name(constructor)?;
        torch_api::MODULE_SEQUENCES
            .contains(&qualified.as_str())
            .then_some(Fact {
                kind: ValueKind::Module,
                device: sequence.device,
                ..Fact::UNKNOWN
            })
    }

    /// An optimizer's parameter groups and their parameters: `for group in
    /// optimizer.param_groups:` binds a group (a container of the model's parameters, on the
    /// device; its other entries, `group["lr"]`, stay unknown), and `for p in group["params"]:`
    /// binds a parameter, a tensor on the device like the model it belongs to.
    fn parameter_group_row(
        &self,
        iterable: Node<'_>,
        origin: Option<(usize, usize)>,
    ) -> Option<Fact> {
        let iterable = syntax::unparenthesize(iterable);
        match iterable.kind_key() {
            kind::ATTRIBUTE
                if iterable.field("attribute").is_some_and(|attribute| {
                    syntax::text_is(attribute, self.source, "param_groups")
                }) =>
            {
                Some(Fact {
                    kind: ValueKind::Container,
                    device: Device::Accelerator,
                    origin,
                    evidence: Evidence::Unknown,
                })
            }
            kind::SUBSCRIPT => {
                let group = iterable.field("value")?;
                let key = iterable.field("subscript")?;
                let group_fact = self.fact(group);
                (syntax::string_value(key, self.source).as_deref() == Some("params")
                    && group_fact.kind == ValueKind::Container
                    && group_fact.device == Device::Accelerator)
                    .then(|| Fact::tensor(Device::Accelerator, origin))
            }
            _ => None,
        }
    }

    /// Binds the names of a loop target to a batch's tensor (not a starred name: a list).
    fn bind_batch(&mut self, target: Node<'_>, batch: Fact) {
        for name in syntax::target_names(target, false) {
            self.bind(
                node_text(name, self.source).to_string(),
                Binding::Value(batch),
            );
        }
    }

    /// Called by the checker after the subtree of `node` was visited.
    pub fn leave(&mut self, node: Node<'t>) {
        self.leave_kind(node, node.kind_name());
    }

    /// [`Self::leave`] with `kind` = `node.kind_name()`, known already.
    pub(crate) fn leave_kind(&mut self, node: Node<'t>, kind: &str) {
        *self.qualified_name_memo.get_mut() = None;
        if self
            .ancestors
            .last()
            .is_some_and(|last| last.id() == node.id())
        {
            self.ancestors.pop();
        }
        if matches!(
            kind,
            "block" | "function_definition" | "class_definition" | "lambda"
        ) && self.guard_frames.len() > 1
            && self
                .guard_frames
                .last()
                .is_some_and(|f| f.node_id == node.id())
        {
            self.guard_frames.pop();
        }
        match node.kind_key() {
            kind::ASSERT_STATEMENT => {
                if let Some(test) = guards::after_assert(node, self.source)
                    && let Some(frame) = self.guard_frames.last_mut()
                {
                    guards::apply_exit(&mut frame.scope, test);
                }
            }
            kind::IF_STATEMENT => {
                if let Some(test) = guards::after_early_exit(node, self.source)
                    && let Some(frame) = self.guard_frames.last_mut()
                {
                    guards::apply_exit(&mut frame.scope, test);
                }
                // `if step % n != 0: return`: the rest of the block runs once every N steps.
                if self
                    .summaries
                    .throttle_exits
                    .contains(&summaries::node_key(node))
                    && let Some(frame) = self.guard_frames.last_mut()
                {
                    frame.cold = true;
                }
            }
            kind::RETURN_STATEMENT => self.leave_return(node),
            kind::FUNCTION_DEFINITION => {
                if let Some(Frame::Function { node_id, id, .. }) = self.frames.last()
                    && *node_id == node.id()
                    && let Some(function) = self.functions.get_mut(*id)
                {
                    function.complete = true;
                }
                if matches!(self.frames.last(), Some(Frame::Function { node_id, .. }) if *node_id == node.id())
                {
                    self.frames.pop();
                    if self.scopes.len() > 1 {
                        self.scopes.pop();
                    }
                }
            }
            kind::CLASS_DEFINITION => {
                if matches!(self.frames.last(), Some(Frame::Class(_))) {
                    self.frames.pop();
                    if self.scopes.len() > 1 {
                        self.scopes.pop();
                    }
                }
            }
            kind::FOR_STATEMENT | kind::WHILE_STATEMENT => {
                if matches!(self.frames.last(), Some(Frame::Loop { node_id, .. }) if *node_id == node.id())
                {
                    self.frames.pop();
                }
            }
            kind::ASSIGNMENT => self.leave_assignment(node),
            kind::IMPORT_STATEMENT | kind::IMPORT_FROM_STATEMENT if self.scopes.len() > 1 => {
                self.bind_import(node);
            }
            kind::EXPRESSION_STATEMENT => self.leave_expression_statement(node),
            _ => {}
        }
    }

    fn current_scope(&self) -> HardwareScope {
        self.guard_frames
            .last()
            .map(|frame| frame.scope)
            .unwrap_or_default()
    }

    fn enter_block(&mut self, block: Node<'t>) {
        let count = self.ancestors.len();
        let (Some(&parent), grandparent) = (
            count.checked_sub(2).and_then(|i| self.ancestors.get(i)),
            count
                .checked_sub(3)
                .and_then(|i| self.ancestors.get(i))
                .copied(),
        ) else {
            return;
        };
        // The pre-pass worked out the block's own guard; a block it did not walk (none, in a
        // full check) gets it afresh.
        let guard = self
            .summaries
            .block_guard(block)
            .unwrap_or_else(|| guards::block_guard(block, parent, grandparent, self.source));
        let mut scope = guard.apply(self.current_scope());
        // A block that calls a CUDA-only package (Megatron-LM, bitsandbytes, Triton, …) needs a
        // CUDA GPU whenever it runs.
        if self.summaries.needs_cuda_library(block)
            || self.is_cuda_mode_branch(block, parent)
            || self.is_cuda_value_branch(block, parent)
            || self.is_off_tpu_predicate_branch(block, parent)
            || self.is_off_tpu_test_value_branch(block, parent)
        {
            scope.never_on_tpu = true;
            scope.device_branch = true;
        }
        // A function that runs the same code on CUDA and on a TPU compares them on purpose.
        if self
            .summaries
            .comparison_scopes
            .contains(&summaries::node_key(block))
        {
            scope.device_branch = true;
        }
        let error_branch = guards::is_error_branch(block, parent, self.source);
        let cold = self.in_cold_code()
            || error_branch
            || guards::is_loop_exit_branch(block, parent, self.source)
            || guards::is_throttled_block(block, parent, &self.summaries.throttles);
        let outer = self.guard_frames.last().copied();
        self.guard_frames.push(GuardFrame {
            node_id: block.id(),
            scope,
            test_code: self.in_test_code(),
            cold,
            errors_only: error_branch || outer.is_some_and(|f| f.errors_only),
            load_time: outer.is_some_and(|f| f.load_time),
            once_per_run: outer.is_some_and(|f| f.once_per_run),
            host_data: outer.is_some_and(|f| f.host_data),
        });
    }

    /// `if self.model_parallel:` where the flag switches a CUDA-only mode on (see
    /// `Summaries::cuda_mode_flags`): the branch runs only with CUDA.
    fn is_cuda_mode_branch(&self, block: Node<'_>, parent: Node<'_>) -> bool {
        if parent.is_not(kind::IF_STATEMENT)
            || parent
                .field("consequence")
                .is_none_or(|c| c.id() != block.id())
            || self.summaries.cuda_mode_flags.is_empty()
        {
            return false;
        }
        let Some(condition) = parent.field("condition").map(syntax::unparenthesize) else {
            return false;
        };
        // `self.flag` alone, or on the left of `and` (`self.model_parallel and x`).
        let tested = match condition.kind_key() {
            kind::BOOLEAN_OPERATOR
                if condition
                    .field("operator")
                    .is_some_and(|o| syntax::text_is(o, self.source, "and")) =>
            {
                condition.field("left")
            }
            _ => Some(condition),
        };
        tested.is_some_and(|tested| {
            tested.is(kind::ATTRIBUTE)
                && tested
                    .field("object")
                    .is_some_and(|o| syntax::text_is(o, self.source, "self"))
                && tested.field("attribute").is_some_and(|a| {
                    self.summaries
                        .cuda_mode_flags
                        .contains(node_text(a, self.source))
                })
        })
    }

    /// `if self._use_closures():` (or `if use_cuda_graphs() and x:`) where the file's function
    /// of that name returns a true value only off a TPU
    /// ([`summaries::FunctionSummary::true_only_off_tpu`]): the branch never runs on a TPU.
    /// A method call asks the file's methods of that name, a bare call its module-level
    /// functions; every one of them must say so.
    fn is_off_tpu_predicate_branch(&self, block: Node<'_>, parent: Node<'_>) -> bool {
        let condition = match parent.kind_key() {
            kind::IF_STATEMENT
                if parent
                    .field("consequence")
                    .is_some_and(|c| c.id() == block.id()) =>
            {
                parent.field("condition")
            }
            kind::ELIF_CLAUSE => parent.field("condition"),
            _ => None,
        };
        let Some(condition) = condition.map(syntax::unparenthesize) else {
            return false;
        };
        let is_and = condition.is(kind::BOOLEAN_OPERATOR)
            && condition
                .field("operator")
                .is_some_and(|o| syntax::text_is(o, self.source, "and"));
        let tested = if is_and {
            [condition.field("left"), condition.field("right")]
        } else {
            [Some(condition), None]
        };
        tested.into_iter().any(|tested| {
            let Some((function, _)) =
                tested.and_then(|tested| syntax::call_parts(syntax::unparenthesize(tested)))
            else {
                return false;
            };
            let text = node_text(function, self.source);
            let (name, method) = match text.strip_prefix("self.") {
                Some(name) => (name, true),
                None => (text, false),
            };
            if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return false;
            }
            // Some function of that name, and every one only true off a TPU.
            let mut found = false;
            for function in &self.summaries.functions {
                if function.name == name && function.class_name.is_some() == method {
                    if !function.true_only_off_tpu {
                        return false;
                    }
                    found = true;
                }
            }
            found
        })
    }

    fn enter_definition_guards(&mut self, definition: Node<'t>) {
        let decorated = self
            .parent(definition)
            .filter(|p| p.is(kind::DECORATED_DEFINITION));
        let mut scope =
            guards::definition_scope(self.current_scope(), definition, decorated, self.source);
        // A class whose `__init__` calls a CUDA-only package has no instance without CUDA.
        if self.summaries.needs_cuda_library(definition) {
            scope.never_on_tpu = true;
            scope.device_branch = true;
        }
        let outer = self.guard_frames.last().copied();
        let load_time = definition.is(kind::FUNCTION_DEFINITION)
            && self
                .function_summary(definition)
                .is_some_and(|summary| summary.load_time);
        // Not inherited by nested definitions and lambdas: a closure may run any number of times.
        let once_per_run = definition.is(kind::FUNCTION_DEFINITION)
            && self
                .function_summary(definition)
                .is_some_and(|summary| summary.once_per_run);
        let host_data = outer.is_some_and(|f| f.host_data)
            || match definition.kind_key() {
                kind::CLASS_DEFINITION => {
                    roles::is_dataset_class(definition, self.source)
                        || definition.field("name").is_some_and(|name| {
                            self.summaries
                                .host_transform_components
                                .contains(node_text(name, self.source))
                        })
                }
                // Reach wins: torchvision's `postprocess_detections`, called from `forward`,
                // runs on the device.
                _ => {
                    roles::is_processing_function(definition, self.source)
                        && !self
                            .function_summary(definition)
                            .is_some_and(|summary| summary.reached_from_loop)
                }
            };
        let test_code = self.in_test_code()
            || match definition.kind_key() {
                kind::CLASS_DEFINITION => {
                    roles::is_test_class(definition, self.test_framework, self.source)
                }
                _ => {
                    roles::is_test_function(definition, decorated, self.test_framework, self.source)
                }
            };
        let name = definition
            .field("name")
            .map(|n| node_text(n, self.source))
            .unwrap_or("");
        let cold = self.in_cold_code() || self.summaries.step_closures.contains(name);
        self.guard_frames.push(GuardFrame {
            node_id: definition.id(),
            scope,
            test_code,
            cold,
            errors_only: outer.is_some_and(|f| f.errors_only),
            load_time: load_time || outer.is_some_and(|f| f.load_time),
            once_per_run,
            host_data,
        });
    }

    /// `xm.add_step_closure(lambda: print(loss.item()))`: the lambda runs after the step.
    fn enter_lambda(&mut self, lambda: Node<'t>) {
        let count = self.ancestors.len();
        let call = count
            .checked_sub(3)
            .and_then(|i| self.ancestors.get(i))
            .filter(|call| call.is(kind::CALL));
        let closure = call.is_some_and(|call| {
            self.call_qualified_name(*call)
                .is_some_and(|q| q.ends_with("add_step_closure"))
        });
        if closure {
            let outer = self.guard_frames.last().copied();
            let frame = GuardFrame {
                node_id: lambda.id(),
                scope: self.current_scope(),
                test_code: self.in_test_code(),
                cold: true,
                errors_only: outer.is_some_and(|f| f.errors_only),
                load_time: outer.is_some_and(|f| f.load_time),
                once_per_run: false,
                host_data: outer.is_some_and(|f| f.host_data),
            };
            self.guard_frames.push(frame);
        }
    }

    /// Whether the current node runs off the step (a throttle, a step closure).
    pub fn in_cold_code(&self) -> bool {
        self.guard_frames.last().is_some_and(|frame| frame.cold)
    }

    /// Marks the whole file as test code (its path is a test path: `tests/`, `test_*.py`).
    pub fn set_test_file(&mut self, test_file: bool) {
        if let Some(root) = self.guard_frames.first_mut() {
            root.test_code = test_file;
        }
    }

    /// Marks the whole file as host data-pipeline code (its path says so: `transforms/`,
    /// `image_processing_*.py`, see [`crate::settings::is_data_pipeline_path`]).
    pub fn set_data_pipeline_file(&mut self, host_data: bool) {
        if let Some(root) = self.guard_frames.first_mut() {
            root.host_data = host_data;
        }
    }

    /// Marks the whole file as a checkpoint converter (its path says so: `convert_*.py`, see
    /// [`crate::settings::is_converter_path`]).
    pub fn set_converter_file(&mut self, converter: bool) {
        self.converter = converter;
    }

    /// The roles of the current node's code (error branch, load time, host data pipeline).
    pub fn code_roles(&self) -> CodeRoles {
        self.guard_frames
            .last()
            .map(|frame| CodeRoles {
                error_branch: frame.errors_only,
                load_time: frame.load_time,
                once_per_run: frame.once_per_run,
                host_data: frame.host_data,
            })
            .unwrap_or_default()
    }

    /// Whether a finding of rule `code` at `severity` is reported at the current node, given the
    /// code's role: only errors on the way to an exception; nothing about device tensors'
    /// values in host data-pipeline code; nothing about an op's per-execution cost in
    /// once-per-load code.
    pub fn role_reports(&self, code: &str, severity: crate::diagnostic::Severity) -> bool {
        let Some(frame) = self.guard_frames.last() else {
            return true;
        };
        if frame.errors_only && severity != crate::diagnostic::Severity::Error {
            return false;
        }
        // A converter runs once, offline, on the CPU: what it costs on a TPU does not matter;
        // what raises there (CUDA calls) and a load without `map_location` still do.
        if self.converter && severity != crate::diagnostic::Severity::Error && code != "TPU406" {
            return false;
        }
        // Once per checkpoint load: the cost is paid once; where a load puts its tensors
        // (`torch.load` without `map_location` in `load_checkpoint`, TPU406) still matters.
        if frame.load_time && code != "TPU406" && roles::concerns_execution_cost(code) {
            return false;
        }
        // Once per run (a tutorial's helper, a table built at import): the cost is paid once;
        // errors, and where a load puts its tensors (TPU406), still matter.
        if frame.once_per_run
            && severity != crate::diagnostic::Severity::Error
            && code != "TPU406"
            && roles::concerns_execution_cost(code)
        {
            return false;
        }
        !(frame.host_data && roles::concerns_device_values(code))
    }

    /// Whether the current node is in a function of a library module that no hot path of the
    /// file reaches: how often it runs is decided by callers elsewhere.
    pub fn in_unreached_library_code(&self) -> bool {
        self.library_module
            && self.hot_path().is_none()
            && self
                .frames
                .iter()
                .any(|frame| matches!(frame, Frame::Function { .. }))
    }

    /// Whether the current node is test code: in a test function, fixture or test class (in a
    /// file that uses a test framework), or anywhere in a file on a test path.
    pub fn in_test_code(&self) -> bool {
        self.guard_frames
            .last()
            .is_some_and(|frame| frame.test_code)
    }

    /// What the guards around the current node say about the hardware it runs on.
    pub fn hardware_scope(&self) -> HardwareScope {
        self.current_scope()
    }

    /// What a loop's body does (backward, optimizer step, syncs itself or through a function of
    /// this file, nested training loop, exits), from the pre-pass.
    pub fn loop_summary(&self, loop_node: Node<'_>) -> Option<&LoopSummary> {
        self.summaries.loop_summary(loop_node)
    }

    /// Whether a function around the traversal's current node imports `package` itself, under
    /// no narrower guard than the function (`def _mp_fn(index): import torch_xla`): the code
    /// there runs with the package loaded whenever it runs at all.
    pub fn function_imports_unconditionally(&self, package: &str) -> bool {
        self.imports
            .records()
            .iter()
            .filter(|record| {
                record.condition == ImportCondition::InFunction && record.names_package(package)
            })
            .any(|record| {
                self.ancestors.iter().any(|ancestor| {
                    ancestor.is(kind::FUNCTION_DEFINITION)
                        && ancestor.start_byte() <= record.statement.start
                        && record.statement.end <= ancestor.end_byte()
                })
            })
    }

    /// Whether a function around the traversal's current node, in a file that is no library
    /// module, imports `package` itself, unconditionally or under the script's own `if`
    /// (`if args.tpu: import torch_xla.core.xla_model as xm` in `main`): the user's flag chooses
    /// the TPU path, and the function's code is that path's code. An availability probe
    /// (`if is_torch_xla_available():`), a `try: … except ImportError:` and every import of a
    /// library module are left out: there the package is optional, and the code serves other
    /// devices as much.
    pub fn script_function_imports(&self, package: &str) -> bool {
        !self.library_module
            && self
                .imports
                .records()
                .iter()
                .filter(|record| {
                    matches!(
                        record.condition,
                        ImportCondition::InFunction | ImportCondition::OtherIf
                    ) && record.in_function
                        && !record.type_checking
                        && record.names_package(package)
                })
                .any(|record| {
                    self.ancestors.iter().any(|ancestor| {
                        ancestor.is(kind::FUNCTION_DEFINITION)
                            && ancestor.start_byte() <= record.statement.start
                            && record.statement.end <= ancestor.end_byte()
                    })
                })
    }

    /// Whether the statement `module.to(device)` (or any `.to(device)` call on that name or
    /// attribute) moves `module` to a device between the byte offsets `after` and `before`, in
    /// `function`'s body (the module's when `None`).
    pub fn module_moved_between(
        &self,
        function: Option<Node<'_>>,
        module: &str,
        after: usize,
        before: usize,
    ) -> bool {
        let index = match function {
            Some(definition) => match self.summaries.function_index(definition) {
                Some(index) => Some(index),
                None => return false,
            },
            None => None,
        };
        self.summaries
            .module_moved_within(index, module, after..before)
    }

    /// The summary of a function definition (what it does, whether a training loop reaches it).
    pub fn function_summary(&self, definition: Node<'_>) -> Option<&FunctionSummary> {
        let index = self.summaries.function_index(definition)?;
        self.summaries.functions.get(index)
    }

    /// Whether the function of `summary` calls a compiled function of this file by name
    /// (`step = torch.compile(self.step)` then `step(...)`; `compiled` is in
    /// `FunctionSummary::read_by_name`).
    pub fn calls_compiled_function(&self, summary: &FunctionSummary) -> bool {
        summary.calls.iter().any(|callee| {
            self.summaries
                .functions
                .iter()
                .any(|function| function.compiled && function.name == *callee)
        })
    }

    /// Whether a call of a function of this file (`prepare(batch)`, `self.training_step(batch)`)
    /// sends its positional argument at `position` to a device in the callee's body (by the
    /// callee's summary, [`FunctionSummary::moved_parameters`]; any function of that name).
    pub fn call_moves_argument(&self, call: Node<'_>, position: usize) -> bool {
        let Some((function, _)) = syntax::call_parts(call) else {
            return false;
        };
        let (name, method) = match function.kind_key() {
            kind::IDENTIFIER => (node_text(function, self.source), false),
            kind::ATTRIBUTE
                if function
                    .field("object")
                    .is_some_and(|o| syntax::text_is(o, self.source, "self")) =>
            {
                match function.field("attribute") {
                    Some(attribute) => (node_text(attribute, self.source), true),
                    None => return false,
                }
            }
            _ => return false,
        };
        self.summaries.functions.iter().any(|summary| {
            let bound = method && summary.parameters.first().is_some_and(|p| p == "self");
            summary.name == name
                && summary
                    .moved_parameters
                    .contains(&(position + usize::from(bound)))
        })
    }

    /// Whether a call runs a function of this file that returns the first of a list of widths
    /// holding its argument (`bucket_len(longest)`; [`FunctionSummary::returns_bucket`], any
    /// function of that name).
    pub fn call_returns_bucket(&self, call: Node<'_>) -> bool {
        let Some((function, _)) = syntax::call_parts(call) else {
            return false;
        };
        let name = match function.kind_key() {
            kind::IDENTIFIER => node_text(function, self.source),
            kind::ATTRIBUTE => match function.field("attribute") {
                Some(attribute) => node_text(attribute, self.source),
                None => return false,
            },
            _ => return false,
        };
        self.summaries
            .functions
            .iter()
            .any(|summary| summary.returns_bucket && summary.name == name)
    }

    /// The name of the function of this file a call runs (`generate(lm, cond, steps)`,
    /// `self.generate(...)`) when that function cuts the graph, itself or through the functions
    /// it calls, and neither it nor any function of the file it reaches waits for the device
    /// ([`FunctionSummary::waits`]): the call returns with the device work still queued. Every
    /// function of that name is taken into account (the call graph joins by name).
    pub fn call_syncs_without_waiting(&self, call: Node<'_>) -> Option<&'t str> {
        let (function, _) = syntax::call_parts(call)?;
        let name = match function.kind_key() {
            kind::IDENTIFIER => node_text(function, self.source),
            kind::ATTRIBUTE
                if function
                    .field("object")
                    .is_some_and(|o| syntax::text_is(o, self.source, "self")) =>
            {
                node_text(function.field("attribute")?, self.source)
            }
            _ => return None,
        };
        let functions = &self.summaries.functions;
        let named: Vec<usize> = (0..functions.len())
            .filter(|&index| functions[index].name == name)
            .collect();
        if named.is_empty()
            || !named
                .iter()
                .any(|&index| functions[index].syncs || functions[index].syncs_through_calls)
        {
            return None;
        }
        // Neither it nor any function of the file it reaches waits (transitively, by name:
        // `FunctionSummary::waits_through_calls`, part of what callers read by name).
        if named
            .iter()
            .any(|&index| functions[index].waits || functions[index].waits_through_calls)
        {
            return None;
        }
        Some(name)
    }

    /// For a device move of a module (`model.to(device)`) whose parameters an earlier call of
    /// the same function kept (`torch.optim.AdamW(model.parameters())`) with none after the
    /// move: that call's range (see `Summaries::stale_parameter_moves`).
    pub fn parameters_kept_before_move(&self, call: Node<'_>) -> Option<TextRange> {
        let call = summaries::node_key(call);
        self.summaries
            .stale_parameter_moves
            .iter()
            .find(|(moved, _)| *moved == call)
            .map(|(_, capture)| capture.clone())
    }

    /// Whether a `torch.cuda.device_count()` call is bound to a name its function only compares
    /// (see `Summaries::compared_counts`).
    pub fn count_only_compared(&self, call: Node<'_>) -> bool {
        self.summaries
            .compared_counts
            .contains(&summaries::node_key(call))
    }

    /// Whether the code at `range` (a finding's range, within or at the current node `node`)
    /// runs only where no TPU is (see [`guards`]: `cuda_test and …`,
    /// `x.dtype == torch.float16 and …`, a branch of a device choice), within its statement.
    pub fn range_never_on_tpu(&self, node: Node<'t>, range: TextRange) -> bool {
        let Some(position) = self.ancestors.iter().rposition(|a| a.id() == node.id()) else {
            return false;
        };
        let inside = node.start_byte() <= range.start && range.end <= node.end_byte();
        let target = if inside {
            node.named_descendant_for_byte_range(range.start, range.end)
                .unwrap_or(node)
        } else {
            node
        };
        // The path from `node` down to `target` (cheap: one child per level).
        let mut down = Vec::new();
        let mut current = node;
        while current.id() != target.id() {
            let Some(next) = current.child_with_descendant(target) else {
                break;
            };
            down.push(current);
            current = next;
            if down.len() > 256 {
                return false;
            }
        }
        // The ancestors of `target`, innermost last.
        let mut path = self.ancestors[..position].to_vec();
        path.extend(down);
        guards::expression_never_on_tpu(target, &path, self.source)
    }

    /// Facts about the whole file (a syncing loader, eager mode, compilation).
    pub fn file_facts(&self) -> &FileFacts {
        &self.summaries.file
    }

    fn enter_function(&mut self, node: Node<'_>) {
        let source = self.source;
        let name = node
            .field("name")
            .map(|n| node_text(n, source))
            .unwrap_or("")
            .to_string();
        let class = self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Class(index) => Some(*index),
            _ => None,
        });
        let directly_in_class = matches!(self.frames.last(), Some(Frame::Class(_)));
        let in_module_class = directly_in_class
            && class.is_some_and(|index| self.classes.get(index).is_some_and(|c| c.is_module));
        let hot = if self.is_compiled_function(node, &name) {
            Some(HotPath::Compiled)
        } else if name == "forward"
            && (in_module_class
                || directly_in_class
                || is_method_posted_alone(node, &self.frames, source))
        {
            Some(HotPath::Forward)
        } else if summaries::is_step_function_name(&name)
            || summaries::is_per_step_hook(&name)
            || (name == "step"
                && directly_in_class
                && class.is_some_and(|index| {
                    self.classes
                        .get(index)
                        .is_some_and(|c| !c.is_optimizer_like || c.is_optimizer)
                }))
        {
            Some(HotPath::StepFunction)
        } else if self
            .summaries
            .function_index(node)
            .is_some_and(|index| self.summaries.functions[index].reached_from_loop)
        {
            Some(HotPath::CalledFromLoop)
        } else if self.excerpt {
            Some(HotPath::Excerpt)
        } else {
            None
        };
        let id = self.functions.len();
        self.functions.push(FunctionReturns {
            class: if directly_in_class { class } else { None },
            name: name.clone(),
            returns: ReturnFacts::default(),
            complete: false,
        });
        self.bind(name.clone(), Binding::Function(id));
        self.frames.push(Frame::Function {
            name,
            hot,
            class: if directly_in_class { class } else { None },
            node_id: node.id(),
            id,
            summary: self.summaries.function_index(node),
        });
        self.scopes.push(Scope::default());
        if let Some(parameters) = node.field("parameters") {
            // Parameters of a helper the loop calls are whatever the caller passes: no guess.
            let guess = hot.is_some() && hot != Some(HotPath::CalledFromLoop);
            let function = self.summaries.function_index(node);
            self.bind_parameters(parameters, guess, function);
        }
    }

    /// What every call in the file passes for parameter `name` of the function with summary
    /// index `function`, when the calls agree on something known.
    fn passed_fact(&self, function: usize, name: &str) -> Option<passed::PassedFact> {
        let functions = &self.summaries.functions;
        let position = functions
            .get(function)?
            .parameters
            .iter()
            .position(|p| p == name)?;
        // Where the function's parameters begin in the flat list.
        let start: usize = functions
            .iter()
            .take(function)
            .map(|f| f.parameters.len())
            .sum();
        let fact = (*self.summaries.parameter_facts.get(start + position)?)?;
        // A value of unknown kind says something only where every call puts it on the host
        // (`f(target.cpu())`).
        (fact.kind != ValueKind::Unknown || fact.device == Device::Cpu).then_some(fact)
    }

    /// Decorated with `@torch.compile` / `@torch_xla.compile` or passed to one of them (the
    /// function summary's answer).
    fn is_compiled_function(&self, node: Node<'_>, name: &str) -> bool {
        self.compiled_names.contains(name)
            || self
                .summaries
                .function_index(node)
                .is_some_and(|index| self.summaries.functions[index].compiled)
    }

    /// What a parameter's annotation says the value is, through a type alias bound earlier in
    /// the module (`TensorPair = Tuple[torch.Tensor, torch.Tensor]`, then `initial_state:
    /// Optional[TensorPair]`): a name that merely contains `Tensor` says nothing; the alias's
    /// value (here a tuple of tensors, a container) says what it is. Only a value that is itself
    /// a type expression (a subscript, a dotted or plain name, a `|` union) counts.
    fn parameter_annotation_kind(
        &self,
        annotation: Node<'t>,
        before: usize,
    ) -> torch_api::AnnotatedKind {
        let text = node_text(annotation, self.source);
        let annotated = torch_api::annotated_kind(text);
        if annotated != torch_api::AnnotatedKind::Tensor {
            return annotated;
        }
        // `Tensor`, `FloatTensor`: a tensor type's own name, no alias to look up (the
        // common case, which skips the module's assignments).
        let Some(alias) =
            torch_api::annotation_alias_name(text).filter(|name| !name.ends_with("Tensor"))
        else {
            return annotated;
        };
        match self.last_assignment_before(None, &alias, before) {
            Some(value)
                if value.is_any(&[
                    kind::SUBSCRIPT,
                    kind::ATTRIBUTE,
                    kind::IDENTIFIER,
                    kind::BINARY_OPERATOR,
                ]) =>
            {
                torch_api::annotated_kind(node_text(value, self.source))
            }
            _ => annotated,
        }
    }

    /// Binds parameters: annotated tensors are tensors; in hot functions, unannotated parameters
    /// without a literal default are taken to be tensors on the model's device. What every call
    /// of the function in the file passes (`passed.rs`; `function` is its summary index) comes
    /// after the annotation and the default, and before the guess: it is evidence, the guess is
    /// not. It never makes the function hot.
    fn bind_parameters(&mut self, parameters: Node<'_>, hot: bool, function: Option<usize>) {
        let source = self.source;
        let children: Vec<Node<'_>> = parameters.named_nodes().collect();
        for (index, parameter) in children.into_iter().enumerate() {
            let (name_node, annotation, default) = match parameter.kind_key() {
                kind::IDENTIFIER => (Some(parameter), None, None),
                kind::TYPED_PARAMETER => (
                    parameter.named_child(0).filter(|n| n.is(kind::IDENTIFIER)),
                    parameter.field("type"),
                    None,
                ),
                kind::DEFAULT_PARAMETER => {
                    (parameter.field("name"), None, parameter.field("value"))
                }
                kind::TYPED_DEFAULT_PARAMETER => (
                    parameter.field("name"),
                    parameter.field("type"),
                    parameter.field("value"),
                ),
                _ => continue,
            };
            let Some(name_node) = name_node else { continue };
            let name = node_text(name_node, source);
            if index == 0 && (name == "self" || name == "cls") {
                continue;
            }
            let origin = Some((name_node.start_byte(), name_node.end_byte()));
            // A flag's default says what it is, whatever the annotation claims
            // (`output_attentions: Optional[torch.Tensor] = False`).
            let flag_default =
                default.is_some_and(|d| d.is_any(&[kind::TRUE, kind::FALSE, kind::STRING]));
            let fact = if flag_default {
                Fact::of(ValueKind::Scalar)
            } else if let Some(annotation) = annotation {
                match self.parameter_annotation_kind(annotation, parameters.start_byte()) {
                    // The annotation names the kind, not the placement: where every call in the
                    // file passes an explicit host copy (`compute_dtm(target.cpu(), pred)`), it
                    // is on the host. A factory's default placement (a demo's
                    // `f(torch.zeros(3))`) does not outweigh the annotation of a public
                    // function, which callers elsewhere give device tensors; a private one's
                    // (`_mass(torch.tensor(levels))`) callers are all in this file, so what
                    // they pass is where the value is.
                    torch_api::AnnotatedKind::Tensor
                        if let Some(f) = function
                            && self.passed_fact(f, name).is_some_and(|passed| {
                                matches!(passed.kind, ValueKind::Tensor | ValueKind::Unknown)
                                    && passed.device == Device::Cpu
                                    && (passed.placed || {
                                        let callee = &self.summaries.functions[f].name;
                                        callee.starts_with('_') && !callee.ends_with("__")
                                    })
                            }) =>
                    {
                        Fact {
                            kind: ValueKind::Tensor,
                            device: Device::Cpu,
                            origin,
                            evidence: Evidence::CallSite,
                        }
                    }
                    torch_api::AnnotatedKind::Tensor => Fact::tensor(Device::Accelerator, origin)
                        .with_evidence(Evidence::Annotation),
                    torch_api::AnnotatedKind::Container => Fact::of(ValueKind::Container),
                    torch_api::AnnotatedKind::Other => Fact::of(ValueKind::Scalar),
                }
            } else if default.is_some_and(|d| d.is_not(kind::NONE)) {
                Fact::of(ValueKind::Scalar)
            } else if let Some(passed) = function.and_then(|f| self.passed_fact(f, name)) {
                Fact {
                    kind: passed.kind,
                    device: passed.device,
                    origin,
                    evidence: Evidence::CallSite,
                }
            } else if function.is_some_and(|f| {
                torch_api::is_hook_loss_parameter(&self.summaries.functions[f].name, name)
            }) {
                // The framework passes what its step differentiated: Lightning's
                // `on_train_batch_end(outputs, ...)` gets `training_step`'s output (the loss or
                // a dict holding it), `on_before_backward(loss)` the loss.
                Fact::tensor(Device::Accelerator, origin).with_evidence(Evidence::FlowsIntoBackward)
            } else if hot {
                Fact::tensor(Device::Accelerator, origin).with_evidence(Evidence::GuessedParameter)
            } else {
                Fact::UNKNOWN
            };
            self.bind(name.to_string(), Binding::Value(fact));
        }
    }

    fn enter_class(&mut self, node: Node<'_>) {
        let source = self.source;
        let is_module = node
            .field("superclasses")
            .map(|superclasses| {
                let mut module_class = false;
                for base in syntax::named_children(superclasses) {
                    if self.is_module_class_expr(base) {
                        module_class = true;
                        break;
                    }
                }
                module_class
            })
            .unwrap_or(false);
        let is_optimizer_like = node.field("superclasses").is_some_and(|superclasses| {
            let text = node_text(superclasses, source);
            text.contains("Optimizer") || text.contains("Scheduler") || text.contains("LRScheduler")
        });
        let is_optimizer = node.field("superclasses").is_some_and(|superclasses| {
            syntax::named_children(superclasses)
                .into_iter()
                .any(|base| self.is_optimizer_class_expr(base))
        });
        let derives_from_nn_module = node.field("superclasses").is_some_and(|superclasses| {
            syntax::named_children(superclasses)
                .into_iter()
                .any(|base| {
                    self.qualified_name(base)
                        .is_some_and(|qualified| qualified == "torch.nn.Module")
                })
        });
        let defines_constructor = node.field("body").is_some_and(|body| {
            syntax::methods(body).any(|method| {
                method
                    .field("name")
                    .is_some_and(|name| node_text(name, source) == "__init__")
            })
        });
        // A subclass of a class of this file starts with its base's `self.<name>` facts
        // (`self.c_attn` assigned in the base's `__init__` and called in the subclass's
        // `forward`); its own assignments replace them.
        let inherited = node
            .field("superclasses")
            .map(syntax::named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|base| base.is(kind::IDENTIFIER))
            .find_map(|base| match self.lookup(node_text(base, source)) {
                Some(Binding::Class(base_index)) => self
                    .classes
                    .get(*base_index)
                    .map(|base| base.attributes.clone()),
                _ => None,
            })
            .unwrap_or_default();
        // Read from the pre-pass summaries of the class body's own methods: the class
        // definition is one statement, so an incremental check re-reads them with it.
        let places_through_launcher = node.field("body").is_some_and(|body| {
            syntax::methods(body).any(|method| {
                self.function_summary(method)
                    .is_some_and(|summary| summary.places_through_launcher)
            })
        });
        let index = self.classes.len();
        self.classes.push(ClassInfo {
            is_module,
            is_optimizer_like,
            is_optimizer,
            attributes: inherited,
            module_without_constructor: derives_from_nn_module && !defines_constructor,
            places_through_launcher,
        });
        if let Some(name) = node.field("name") {
            self.bind(node_text(name, source).to_string(), Binding::Class(index));
        }
        self.frames.push(Frame::Class(index));
        self.scopes.push(Scope::default());
    }

    /// `torch.optim.Optimizer` (however imported), or a class of this file deriving from it.
    fn is_optimizer_class_expr(&self, base: Node<'_>) -> bool {
        if let Some(qualified) = self.qualified_name(base)
            && torch_api::is_optimizer_base(&qualified)
        {
            return true;
        }
        base.is(kind::IDENTIFIER)
            && matches!(
                self.lookup(node_text(base, self.source)),
                Some(Binding::Class(index)) if self.classes.get(*index).is_some_and(|c| c.is_optimizer)
            )
    }

    fn is_module_class_expr(&self, base: Node<'_>) -> bool {
        if let Some(qualified) = self.qualified_name(base) {
            if qualified.starts_with("torch.nn.") || qualified.starts_with("transformers.") {
                return qualified.ends_with("Module")
                    || qualified.ends_with("PreTrainedModel")
                    || qualified.ends_with("ModelMixin")
                    || qualified.ends_with("LightningModule")
                    || qualified == "torch.nn.Sequential";
            }
            if qualified.ends_with("LightningModule") {
                return true;
            }
        }
        if base.is(kind::IDENTIFIER)
            && let Some(Binding::Class(index)) = self.lookup(node_text(base, self.source))
        {
            return self.classes.get(*index).is_some_and(|c| c.is_module);
        }
        false
    }

    /// `return <value>`: merges the value's fact into the enclosing function's returns.
    fn leave_return(&mut self, node: Node<'_>) {
        let Some(id) = self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Function { id, .. } => Some(*id),
            _ => None,
        }) else {
            return;
        };
        let Some(value) = node.named_child(0) else {
            return;
        };
        let (fact, elements) = if value.is(kind::EXPRESSION_LIST) {
            let mut elements: Vec<Fact> = Vec::new();
            for element in syntax::named_children(value) {
                elements.push(self.fact(element));
            }
            (Fact::of(ValueKind::Container), Some(elements))
        } else {
            (self.fact(value), None)
        };
        if let Some(function) = self.functions.get_mut(id) {
            function.returns.add(fact, elements);
        }
    }

    /// The fact of a call to the function with binding id `id`, from its return statements
    /// (known once its definition has been walked).
    fn summary_return(&self, id: usize, origin: Option<(usize, usize)>) -> Fact {
        match self.functions.get(id) {
            Some(function) if function.complete => match function.returns.single() {
                Some(fact) if fact.kind != ValueKind::Unknown => Fact {
                    origin: fact.origin.or(origin),
                    ..fact
                }
                .with_evidence(Evidence::Summary),
                _ => Fact::UNKNOWN,
            },
            _ => Fact::UNKNOWN,
        }
    }

    /// The id of the method `name` of the class around the current method, once walked.
    fn method_summary(&self, name: &str) -> Option<usize> {
        let class = self.current_method_class()?;
        self.functions
            .iter()
            .rposition(|f| f.complete && f.class == Some(class) && f.name == name)
    }

    /// The id of the method `name` when exactly one class of the file defines a method of that
    /// name and it has been walked (a call `obj.name(...)` on an object of unknown kind).
    fn only_method_named(&self, name: &str) -> Option<usize> {
        let mut definitions = self
            .summaries
            .functions
            .iter()
            .filter(|f| f.class_name.is_some() && f.name == name);
        let class_name = definitions.next()?.class_name.as_deref();
        if definitions.any(|f| f.class_name.as_deref() != class_name) {
            return None;
        }
        self.functions
            .iter()
            .rposition(|f| f.complete && f.class.is_some() && f.name == name)
    }

    /// Whether the current function is a method of an `nn.Module` subclass.
    fn in_module_method(&self) -> bool {
        self.current_method_class()
            .and_then(|class| self.classes.get(class))
            .is_some_and(|class| class.is_module)
    }

    /// For `a, b = helper(x)`: the facts of the elements `helper` returns, when its returns are
    /// tuples of that many elements.
    fn tuple_elements(&self, value: Node<'_>, count: usize) -> Option<Vec<Fact>> {
        let (function, _) = syntax::call_parts(value)?;
        let id = match function.kind_key() {
            kind::IDENTIFIER => match self.lookup(node_text(function, self.source)) {
                Some(Binding::Function(id)) => *id,
                _ => return None,
            },
            kind::ATTRIBUTE => {
                let object = function.field("object")?;
                if !syntax::text_is(object, self.source, "self") {
                    return None;
                }
                self.method_summary(node_text(function.field("attribute")?, self.source))?
            }
            _ => return None,
        };
        let function = self.functions.get(id).filter(|f| f.complete)?;
        let elements = function.returns.tuple()?;
        (elements.len() == count).then(|| {
            elements
                .iter()
                .map(|fact| fact.with_evidence(Evidence::Summary))
                .collect()
        })
    }

    /// For `unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)` (a launcher's
    /// placing method, `torch_api::LAUNCHER_PLACING_METHODS`, by the receiver's last name): one
    /// fact per argument, when the counts match. A module comes back on the accelerator, wrapped
    /// for the launcher's distributed setup; what else comes back is not read.
    fn launcher_placed(&self, value: Node<'_>, count: usize) -> Option<Vec<Fact>> {
        let (function, arguments) = syntax::call_parts(syntax::unparenthesize(value))?;
        if function.is_not(kind::ATTRIBUTE) || syntax::has_splat(arguments) {
            return None;
        }
        let receiver = function.field("object")?;
        let method = node_text(function.field("attribute")?, self.source);
        let receiver_name = match receiver.kind_key() {
            kind::ATTRIBUTE => node_text(receiver.field("attribute")?, self.source),
            kind::IDENTIFIER => node_text(receiver, self.source),
            _ => return None,
        };
        if !torch_api::LAUNCHER_PLACING_METHODS
            .iter()
            .any(|(launcher, placing)| *launcher == receiver_name && *placing == method)
        {
            return None;
        }
        let positional = syntax::positional_args(arguments);
        if positional.len() != count {
            return None;
        }
        let mut facts = Vec::with_capacity(count);
        for argument in positional {
            let fact = self.fact(argument);
            facts.push(if fact.kind == ValueKind::Module {
                Fact {
                    device: Device::Accelerator,
                    ..fact
                }
            } else {
                Fact::UNKNOWN
            });
        }
        Some(facts)
    }

    /// For `ys, xs = torch.meshgrid(sy, sx)`: one fact per input, each where its input is (the
    /// functions of `torch_api::PER_INPUT_RESULT_FUNCTIONS`), when the counts match.
    fn per_input_results(&self, value: Node<'_>, count: usize) -> Option<Vec<Fact>> {
        let qualified = self.call_qualified_name(value)?;
        let name = qualified.strip_prefix("torch.")?;
        if !torch_api::PER_INPUT_RESULT_FUNCTIONS.contains(&name) {
            return None;
        }
        let (_, arguments) = syntax::call_parts(value)?;
        if syntax::has_splat(arguments) {
            return None;
        }
        let positional = syntax::positional_args(arguments);
        let inputs: Vec<Node<'_>> = match positional.as_slice() {
            [single] if single.is_any(&[kind::LIST, kind::TUPLE]) => single.named_nodes().collect(),
            _ => positional,
        };
        if inputs.len() != count {
            return None;
        }
        let facts: Vec<Fact> = inputs.iter().map(|input| self.fact(*input)).collect();
        facts.iter().all(Fact::is_tensor).then_some(facts)
    }

    /// `x.shape` or `x.size()` of a tensor: a `torch.Size`, whose elements are Python ints.
    fn is_tensor_shape(&self, expr: Node<'_>, depth: usize) -> bool {
        let expr = syntax::unparenthesize(expr);
        let object = match expr.kind_key() {
            kind::ATTRIBUTE
                if expr
                    .field("attribute")
                    .is_some_and(|a| syntax::text_is(a, self.source, "shape")) =>
            {
                expr.field("object")
            }
            kind::CALL => syntax::method_call(expr).and_then(|(receiver, method)| {
                let no_arguments = expr
                    .field("arguments")
                    .is_some_and(|a| a.named_child_count() == 0);
                (syntax::text_is(method, self.source, "size") && no_arguments).then_some(receiver)
            }),
            _ => None,
        };
        object.is_some_and(|object| self.fact_at_depth(object, depth + 1).is_tensor())
    }

    fn leave_assignment(&mut self, node: Node<'t>) {
        self.bind_assignment(node);
        self.bind_flows_into_backward(node);
        self.bind_model_outputs(node);
    }

    /// The loops around the current node within its function, class body or lambda, innermost
    /// first.
    fn loops_in_scope(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.ancestors
            .iter()
            .rev()
            .take_while(|a| {
                !a.is_any(&[
                    kind::FUNCTION_DEFINITION,
                    kind::CLASS_DEFINITION,
                    kind::LAMBDA,
                ])
            })
            .filter(|a| a.is_any(&[kind::FOR_STATEMENT, kind::WHILE_STATEMENT]))
            .copied()
    }

    /// A binding of a decode loop's model output (`logits = model(idx_cond)`, the loop's
    /// `model_outputs`) is a device tensor, as a module call's is, when nothing else is known of
    /// it: the callee is a parameter or a name the index cannot follow, and the loop feeds it its
    /// own output every step.
    fn bind_model_outputs(&mut self, node: Node<'t>) {
        let Some(left) = node.field("left") else {
            return;
        };
        let Some(loop_node) = self.loops_in_scope().next() else {
            return;
        };
        let Some(at) = node.start_byte().checked_sub(loop_node.start_byte()) else {
            return;
        };
        let Some(summary) = self.summaries.loop_summary(loop_node) else {
            return;
        };
        if summary.model_outputs.is_empty() {
            return;
        }
        let source = self.source;
        let outputs: Vec<&str> = backward_flow::targets(left)
            .into_iter()
            .map(|target| node_text(target, source))
            .filter(|name| {
                summary
                    .model_outputs
                    .iter()
                    .any(|(output, start)| output == name && *start == at)
            })
            .filter(|name| {
                matches!(
                    self.lookup(name),
                    Some(Binding::Value(fact)) if fact.kind == ValueKind::Unknown
                )
            })
            .collect();
        let origin = node.field("right").map(|r| (r.start_byte(), r.end_byte()));
        let fact = Fact::tensor(Device::Accelerator, origin).with_evidence(Evidence::ModuleCall);
        for name in outputs {
            self.bind(name.to_string(), Binding::Value(fact));
        }
    }

    /// A binding whose value flows into a backward call of an enclosing training loop (the
    /// loop's `flows_into_backward`) is a device tensor when nothing else is known of it:
    /// `out = model(x)` with `model` a parameter, before `loss = criterion(out, y)` and
    /// `loss.backward()`.
    fn bind_flows_into_backward(&mut self, node: Node<'t>) {
        let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
            return;
        };
        // The enclosing loops' lists (most assignments have none, and then nothing is looked
        // up), with the assignment's offset into each loop.
        let flowing: Vec<(&[(String, usize)], usize)> = self
            .loops_in_scope()
            .filter_map(|loop_node| {
                let at = node.start_byte().checked_sub(loop_node.start_byte())?;
                let summary = self.summaries.loop_summary(loop_node)?;
                (!summary.flows_into_backward.is_empty())
                    .then_some((summary.flows_into_backward.as_slice(), at))
            })
            .collect();
        if flowing.is_empty() {
            return;
        }
        let source = self.source;
        let mut flows_in = Vec::new();
        // `ids, mask = ids.to(device), mask.to(device)`: each name's own element is its value.
        let pairs: Vec<(Node<'t>, Node<'t>)> = backward_flow::paired_elements(left, right)
            .unwrap_or_else(|| {
                backward_flow::targets(left)
                    .into_iter()
                    .map(|t| (t, right))
                    .collect()
            });
        for (target, value) in pairs {
            let name = node_text(target, source);
            let unknown = matches!(
                self.lookup(name),
                Some(Binding::Value(fact)) if fact.kind == ValueKind::Unknown
            );
            if unknown
                && flowing.iter().any(|(bindings, at)| {
                    bindings
                        .iter()
                        .any(|(flowing, start)| flowing == name && start == at)
                })
            {
                flows_in.push((name, value));
            }
        }
        // The value is the evidence, as for any assignment.
        for (name, value) in flows_in {
            let origin = Some((value.start_byte(), value.end_byte()));
            let fact = Fact::tensor(Device::Accelerator, origin)
                .with_evidence(Evidence::FlowsIntoBackward);
            self.bind(name.to_string(), Binding::Value(fact));
        }
    }

    fn bind_assignment(&mut self, node: Node<'t>) {
        let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
            return;
        };
        // `a, b = x.get("a"), x.get("b")`: element by element.
        if let Some(pairs) = backward_flow::element_pairs(left, right) {
            // Each name's value is recorded where it is written, as a one-name binding records
            // its right side: a rule walks back from there to the factory it was computed from
            // (`lower, upper = torch.cat([z[:, :1], mids], -1), torch.cat(...)`). All facts
            // first, then the bindings: `a, b = b, a` reads the old values.
            let facts: Vec<(Node<'t>, Fact)> = pairs
                .into_iter()
                .map(|(target, value)| {
                    let fact = self.fact(value);
                    let origin = fact.origin.or(Some((value.start_byte(), value.end_byte())));
                    (target, Fact { origin, ..fact })
                })
                .collect();
            for (target, fact) in facts {
                self.bind_target(target, fact, 1);
            }
            return;
        }
        // `_, _, h, w = x.shape` / `b, n = x.size()`: the dimensions are Python ints.
        if left.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN, kind::LIST_PATTERN])
            && self.is_tensor_shape(right, 0)
        {
            for target in left.named_nodes() {
                self.bind_target(target, Fact::of(ValueKind::Scalar), 1);
            }
            return;
        }
        if left.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN]) && right.is(kind::CALL) {
            let mut cursor = left.walk();
            let targets: Vec<Node<'_>> = left.named_children(&mut cursor).collect();
            if let Some(elements) = self
                .tuple_elements(right, targets.len())
                .or_else(|| self.per_input_results(right, targets.len()))
                .or_else(|| self.launcher_placed(right, targets.len()))
            {
                for (target, fact) in targets.into_iter().zip(elements) {
                    self.bind_target(target, fact, 1);
                }
                return;
            }
        }
        // `q, k, v = [t.view(...) for t in qkv.split(C, dim=2)]`: each name is an element of the
        // comprehension, a tensor when its body is one (the element's facts come from what the
        // comprehension iterates).
        if matches!(left.kind_name(), "pattern_list" | "tuple_pattern")
            && matches!(
                right.kind_name(),
                "list_comprehension" | "generator_expression"
            )
            && let Some(body) = right.field("body")
        {
            let element = self.fact(body);
            if element.is_tensor() {
                let element = Fact {
                    origin: Some((body.start_byte(), body.end_byte())),
                    ..element
                };
                for target in left.named_nodes() {
                    self.bind_target(target, element, 1);
                }
                return;
            }
        }
        if left.is(kind::IDENTIFIER) && right.is_not(kind::NONE) {
            let cuda = self.current_scope().never_on_tpu || self.value_needs_cuda(right, 0);
            let name = node_text(left, self.source).to_string();
            if self.scopes.len() == 1 {
                self.module_journal
                    .push(digest::ModuleChange::CudaValue(name.clone(), cuda));
            }
            if let Some(scope) = self.scopes.last_mut() {
                scope.cuda_values.record(name, cuda);
            }
        }
        let mut fact = self.fact(right);
        // `model = accelerator.prepare(model)`: the module, placed by the launcher.
        if left.is(kind::IDENTIFIER)
            && let Some([placed]) = self.launcher_placed(right, 1).as_deref()
            && placed.kind == ValueKind::Module
        {
            fact = *placed;
        }
        if fact.origin.is_none() {
            fact.origin = Some((right.start_byte(), right.end_byte()));
        }
        self.bind_target(left, fact, 0);
    }

    /// Whether a value is a `torch.cuda.*` object (see `summaries::value_needs_cuda`).
    fn value_needs_cuda(&self, value: Node<'_>, depth: usize) -> bool {
        summaries::value_needs_cuda(value, self.source, self, depth)
    }

    /// `if x_is_mps_xpu:` where the name was last bound, in the same function, to a device test
    /// that never holds on a TPU (`x_is_mps_xpu = x.device.type in ["mps", "xpu"]`): the branch
    /// runs only there, as if the test were written in the `if`.
    fn is_off_tpu_test_value_branch(&self, block: Node<'t>, parent: Node<'t>) -> bool {
        let Some(condition) = if_condition_of_consequence(block, parent)
            .map(syntax::unparenthesize)
            .filter(|c| c.is(kind::IDENTIFIER))
        else {
            return false;
        };
        let Some(function) = self.function_around(condition) else {
            return false;
        };
        self.last_assignment_before(
            function,
            node_text(condition, self.source),
            condition.start_byte(),
        )
        .and_then(|value| guards::device_test(value, self.source))
        .is_some_and(guards::never_on_tpu_when_true)
    }

    /// `if stream is not None:` / `if stream:` where every non-`None` value of `stream` in this
    /// scope needs CUDA (see `Scope::cuda_values`), or `if self.stream is not None:` where every
    /// non-`None` value of that attribute in the file does (`Summaries::cuda_attributes`): the
    /// branch runs only with CUDA.
    fn is_cuda_value_branch(&self, block: Node<'_>, parent: Node<'_>) -> bool {
        if_condition_of_consequence(block, parent)
            .is_some_and(|condition| self.tests_cuda_value(condition, 0))
    }

    /// Whether `condition` holds only when a CUDA-only value exists: `x`, `x is not None`, or
    /// either side of `… and …` being so.
    fn tests_cuda_value(&self, condition: Node<'_>, depth: usize) -> bool {
        let condition = syntax::unparenthesize(condition);
        if depth < 4
            && condition.is(kind::BOOLEAN_OPERATOR)
            && condition
                .field("operator")
                .is_some_and(|o| syntax::text_is(o, self.source, "and"))
        {
            return syntax::sides(condition).any(|side| self.tests_cuda_value(side, depth + 1));
        }
        let name = match condition.kind_key() {
            kind::IDENTIFIER => Some(condition),
            kind::COMPARISON_OPERATOR if condition.named_child_count() == 2 => {
                let operators = crate::syntax::comparison_operators(condition, self.source);
                let operator = crate::syntax::join(&operators, " ");
                let right_is_none = condition.named_child(1).is_some_and(|r| r.is(kind::NONE));
                (operator == "is not" && right_is_none)
                    .then(|| condition.named_child(0))
                    .flatten()
                    .filter(|n| n.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]))
            }
            kind::ATTRIBUTE => Some(condition),
            _ => None,
        };
        if let Some(attribute) = name.and_then(|n| summaries::self_attribute(n, self.source)) {
            return self.summaries.cuda_attributes.contains(attribute);
        }
        name.filter(|n| n.is(kind::IDENTIFIER)).is_some_and(|name| {
            self.scopes.last().is_some_and(|scope| {
                scope
                    .cuda_values
                    .all_need_cuda(node_text(name, self.source))
            })
        })
    }

    fn bind_target(&mut self, target: Node<'_>, fact: Fact, depth: usize) {
        if depth > MAX_EXPR_DEPTH {
            return;
        }
        let source = self.source;
        match target.kind_key() {
            kind::IDENTIFIER => {
                let name = node_text(target, source);
                // `except ImportError: xm = None` keeps `xm` meaning the guarded import.
                let guarded_fallback = fact.kind == ValueKind::Scalar
                    && matches!(self.lookup(name), Some(Binding::Import(_)));
                if !guarded_fallback {
                    self.bind(name.to_string(), Binding::Value(fact));
                }
            }
            kind::ATTRIBUTE => {
                let object = target.field("object");
                let attribute = target.field("attribute");
                if let (Some(object), Some(attribute)) = (object, attribute)
                    && object.is(kind::IDENTIFIER)
                    && syntax::text_is(object, source, "self")
                    && let Some(class) = self.current_method_class()
                    && let Some(info) = self.classes.get_mut(class)
                {
                    info.attributes
                        .insert(node_text(attribute, source).to_string(), fact);
                }
            }
            kind::PATTERN_LIST
            | kind::TUPLE_PATTERN
            | kind::LIST_PATTERN
            | kind::TUPLE
            | kind::LIST => {
                // `a, b = f(x)`: if the right side is a tensor-producing call, each part is a
                // tensor (tuple outputs of modules); otherwise nothing is known.
                let element = if fact.is_tensor() {
                    fact
                } else {
                    Fact::UNKNOWN
                };
                let children: Vec<Node<'_>> = target.named_nodes().collect();
                for child in children {
                    self.bind_target(child, element, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `self.register_buffer("name", t)` records a device-following tensor attribute.
    fn leave_expression_statement(&mut self, node: Node<'_>) {
        let Some(call) = node.named_child(0).filter(|n| n.is(kind::CALL)) else {
            return;
        };
        let Some((receiver, method)) = syntax::method_call(call) else {
            return;
        };
        let source = self.source;
        // `loss.backward()` / `accelerator.backward(loss)` / `scaler.scale(loss).backward()` /
        // `self.manual_backward(loss)`: whatever `loss` was bound to, it is a tensor from here on.
        let method_name = node_text(method, source);
        if matches!(method_name, "backward" | "manual_backward") {
            let positional = syntax::call_parts(call)
                .map(|(_, arguments)| syntax::positional_args(arguments))
                .unwrap_or_default();
            let receiver_text = node_text(receiver, source);
            let loss = match positional.as_slice() {
                [] if method_name == "backward" => {
                    Some(scaled_loss(receiver, source).unwrap_or(receiver))
                }
                [loss]
                    if receiver_text.ends_with("accelerator")
                        || receiver_text.ends_with("fabric")
                        || (method_name == "manual_backward" && receiver_text == "self") =>
                {
                    Some(*loss)
                }
                _ => None,
            };
            if let Some(loss) = loss.filter(|loss| loss.is(kind::IDENTIFIER))
                && self.fact(loss).kind == ValueKind::Unknown
            {
                let origin = Some((loss.start_byte(), loss.end_byte()));
                let fact =
                    Fact::tensor(Device::Accelerator, origin).with_evidence(Evidence::Backward);
                self.bind(node_text(loss, source).to_string(), Binding::Value(fact));
            }
            return;
        }
        if !syntax::text_is(receiver, source, "self") {
            return;
        }
        let method = node_text(method, source);
        if !matches!(method, "register_buffer" | "register_parameter") {
            return;
        }
        let Some((_, arguments)) = syntax::call_parts(call) else {
            return;
        };
        let positional = syntax::positional_args(arguments);
        let Some(name) = positional
            .first()
            .and_then(|n| syntax::string_value(*n, source))
        else {
            return;
        };
        let Some(class) = self.current_method_class() else {
            return;
        };
        // A buffer follows its module to the device, except in a trainer that places its
        // members through a launcher: nothing moves the trainer, so a host tensor stays there.
        let stays_on_host = self
            .classes
            .get(class)
            .is_some_and(|info| info.places_through_launcher)
            && positional.get(1).is_some_and(|value| {
                let value = self.fact(*value);
                value.is_tensor() && value.device == Device::Cpu
            });
        let device = if stays_on_host {
            Device::Cpu
        } else {
            Device::Accelerator
        };
        let fact = Fact::tensor(device, Some((call.start_byte(), call.end_byte())));
        if let Some(info) = self.classes.get_mut(class) {
            info.attributes.insert(name.into_owned(), fact);
        }
    }

    fn current_method_class(&self) -> Option<usize> {
        self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Function { class, .. } => Some(*class),
            _ => None,
        })?
    }

    /// A loop over a data loader, or one whose own body (not a nested loop's) runs backward, an
    /// optimizer step or a barrier, from the pre-pass's loop summary.
    fn is_training_loop(&self, node: Node<'_>) -> bool {
        if node.is(kind::FOR_STATEMENT)
            && let Some(iterable) = node.field("right")
            && self.is_loader_expr(iterable, 0)
            && !self.moves_batches_to_cuda(node)
        {
            return true;
        }
        self.summaries.loop_summary(node).is_some_and(|summary| {
            (summary.calls_backward || summary.steps_optimizer || summary.syncs)
                && !summary.nested_training_loop
        })
    }

    /// `for images, labels in loader:` whose body starts by rebinding a batch name to its CUDA
    /// copy (`images = images.cuda(non_blocking=True)`): a CUDA evaluation loop left in a
    /// half-ported script. On a TPU machine its first `.cuda()` raises (TPU403 says so), so
    /// iterating a loader does not make it a TPU training loop; running backward, an optimizer
    /// step or a barrier still does (a training loop being ported keeps its findings).
    fn moves_batches_to_cuda(&self, node: Node<'_>) -> bool {
        let source = self.source;
        let (Some(targets), Some(body)) = (node.field("left"), node.field("body")) else {
            return false;
        };
        let mut names: Vec<&str> = Vec::new();
        for target in syntax::target_names(targets, true) {
            names.push(node_text(target, source));
        }
        body.named_nodes().any(|statement| {
            let Some(assignment) = statement.named_child(0).filter(|a| a.is(kind::ASSIGNMENT))
            else {
                return false;
            };
            let (Some(left), Some(right)) = (assignment.field("left"), assignment.field("right"))
            else {
                return false;
            };
            left.is(kind::IDENTIFIER)
                && names.contains(&node_text(left, source))
                && syntax::method_call(right).is_some_and(|(receiver, method)| {
                    node_text(method, source) == "cuda"
                        && node_text(receiver, source) == node_text(left, source)
                })
        })
    }

    fn is_loader_expr(&self, expr: Node<'_>, depth: usize) -> bool {
        if depth > 4 {
            return false;
        }
        let expr = syntax::unparenthesize(expr);
        let source = self.source;
        match expr.kind_key() {
            kind::IDENTIFIER | kind::ATTRIBUTE => {
                if self.fact(expr).kind == ValueKind::DataLoader {
                    return true;
                }
                let last = match expr.kind_key() {
                    kind::ATTRIBUTE => expr
                        .field("attribute")
                        .map(|n| node_text(n, source))
                        .unwrap_or(""),
                    _ => node_text(expr, source),
                };
                let lower = last.to_ascii_lowercase();
                lower.contains("loader") || lower == "train_dl" || lower == "dl"
            }
            kind::CALL => {
                if self.fact(expr).kind == ValueKind::DataLoader {
                    return true;
                }
                let Some((function, arguments)) = syntax::call_parts(expr) else {
                    return false;
                };
                let name = node_text(function, source);
                let wrapper = matches!(name, "enumerate" | "zip" | "tqdm" | "tqdm.tqdm" | "iter")
                    || name.ends_with("tqdm");
                let loader_method = function.is(kind::ATTRIBUTE)
                    && function
                        .field("attribute")
                        .is_some_and(|a| syntax::text_is(a, source, "per_device_loader"));
                if loader_method {
                    return true;
                }
                wrapper
                    && syntax::positional_args(arguments)
                        .first()
                        .is_some_and(|first| self.is_loader_expr(*first, depth + 1))
            }
            _ => false,
        }
    }

    // ----- queries for rules --------------------------------------------------------------

    /// The parent of `node`: from the ancestor stack when `node` is the current node or one of
    /// its ancestors; for a descendant of the current node, by searching down from it; only
    /// for nodes elsewhere in the file does it fall back to `Node::parent` (which walks down
    /// from the root).
    pub fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        if let Some(position) = self.ancestors.iter().rposition(|a| a.id() == node.id()) {
            return position.checked_sub(1).map(|i| self.ancestors[i]);
        }
        if let Some(&current) = self.ancestors.last() {
            let mut current = current;
            for _ in 0..10_000 {
                let Some(next) = current.child_with_descendant(node) else {
                    break;
                };
                if next.id() == node.id() {
                    return Some(current);
                }
                current = next;
            }
        }
        // Elsewhere in the file (e.g. where a value was bound): the slow, general way.
        node.parent()
    }

    /// The fact of a name that a comprehension around `identifier` binds (`[s.item() for s in
    /// scores]`): an element of a tensor is a tensor on its device, element-wise through `zip(…)`
    /// and `enumerate(…)`; a target over anything else is unknown (the comprehension's own
    /// variable, not a name of the enclosing scope). `None` when no comprehension binds the name,
    /// or `identifier` is not within the node being visited (the comprehensions around it are
    /// found on the traversal's stack and by descending from the current node).
    fn comprehension_target_fact(&self, identifier: Node<'_>, depth: usize) -> Option<Fact> {
        let current = *self.ancestors.last()?;
        let (start, end) = (identifier.start_byte(), identifier.end_byte());
        if start < current.start_byte() || end > current.end_byte() {
            return None;
        }
        let is_comprehension = |n: &Node<'t>| {
            n.is_any(&[
                kind::LIST_COMPREHENSION,
                kind::SET_COMPREHENSION,
                kind::DICTIONARY_COMPREHENSION,
                kind::GENERATOR_EXPRESSION,
            ])
        };
        let is_scope = |n: &Node<'t>| {
            n.is_any(&[
                kind::FUNCTION_DEFINITION,
                kind::CLASS_DEFINITION,
                kind::LAMBDA,
            ])
        };
        // Below the current node, innermost last; a scope boundary there hides everything above.
        let mut below: Vec<Node<'t>> = Vec::new();
        let mut bounded = false;
        let mut node = current;
        for _ in 0..MAX_EXPR_DEPTH * 8 {
            if node.start_byte() == start && node.end_byte() == end && node.is(kind::IDENTIFIER) {
                break;
            }
            let mut cursor = node.walk();
            let Some(child) = node
                .named_children(&mut cursor)
                .find(|c| c.start_byte() <= start && end <= c.end_byte())
            else {
                break;
            };
            if is_scope(&child) {
                below.clear();
                bounded = true;
            } else if is_comprehension(&child) {
                below.push(child);
            }
            node = child;
        }
        let name = node_text(identifier, self.source);
        // Innermost first: those below, then those above up to a scope (one list rather than a
        // chain of the two, whose adapters cost the WebAssembly module room).
        let mut comprehensions = below;
        comprehensions.reverse();
        if !bounded {
            comprehensions.extend(
                self.ancestors
                    .iter()
                    .rev()
                    .take_while(|n| !is_scope(n))
                    .filter(|n| is_comprehension(n)),
            );
        }
        for comprehension in comprehensions {
            let mut cursor = comprehension.walk();
            for clause in comprehension.named_children(&mut cursor) {
                if clause.is_not(kind::FOR_IN_CLAUSE) {
                    continue;
                }
                let (Some(left), Some(right)) = (clause.field("left"), clause.field("right"))
                else {
                    continue;
                };
                if right.start_byte() <= start && end <= right.end_byte() {
                    continue;
                }
                if let Some(fact) = self.iteration_target_fact(left, right, name, depth) {
                    return Some(fact);
                }
            }
        }
        None
    }

    /// What `name`, bound by the loop target `left` over `iterable`, holds: `Some` when `left`
    /// binds it. A row of a tensor is a tensor on its device; `zip(a, b)` pairs targets with
    /// arguments and `enumerate(t)` counts; anything else is unknown.
    fn iteration_target_fact(
        &self,
        left: Node<'_>,
        iterable: Node<'_>,
        name: &str,
        depth: usize,
    ) -> Option<Fact> {
        let source = self.source;
        let row = |iterated: Node<'_>| {
            let fact = self.fact_at_depth(iterated, depth + 1);
            if fact.is_tensor() {
                Fact::tensor(
                    fact.device,
                    Some((iterated.start_byte(), iterated.end_byte())),
                )
                .with_evidence(fact.evidence)
            } else if fact.kind == ValueKind::NumpyArray {
                // A row of a NumPy array is an array or a NumPy scalar: on the host.
                Fact::of(ValueKind::NumpyArray)
            } else if let Some(item) = self.module_sequence_item(fact) {
                item
            } else {
                Fact::UNKNOWN
            }
        };
        let left = syntax::unparenthesize(left);
        // `{k: v.float() for k, v in state.items()}` over state loaded onto the host: the values
        // are host tensors, as a `for` loop over the same view binds them.
        let host_view = self.host_container_view(iterable, depth);
        let host_value = || {
            Fact::tensor(
                Device::Cpu,
                Some((iterable.start_byte(), iterable.end_byte())),
            )
        };
        if left.is(kind::IDENTIFIER) {
            if node_text(left, source) != name {
                return None;
            }
            return Some(if host_view == Some("values") {
                host_value()
            } else {
                row(iterable)
            });
        }
        if !left.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN]) {
            return None;
        }
        let targets: Vec<Node<'_>> = left.named_nodes().collect();
        let position = targets
            .iter()
            .position(|t| t.is(kind::IDENTIFIER) && node_text(*t, source) == name);
        let Some(position) = position else {
            // Bound deeper (`for i, (a, b) in …`), or not at all.
            let binds = node_text(left, source)
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| word == name);
            return binds.then_some(Fact::UNKNOWN);
        };
        let call =
            syntax::call_parts(syntax::unparenthesize(iterable)).map(|(function, arguments)| {
                (
                    node_text(function, source),
                    syntax::positional_args(arguments),
                )
            });
        if host_view == Some("items") && targets.len() == 2 {
            return Some(if position == 1 {
                host_value()
            } else {
                Fact::UNKNOWN
            });
        }
        Some(match call {
            Some(("zip", arguments)) if arguments.len() == targets.len() => {
                row(arguments[position])
            }
            Some(("enumerate", arguments)) if targets.len() == 2 && !arguments.is_empty() => {
                if position == 0 {
                    Fact::of(ValueKind::Scalar)
                } else {
                    row(arguments[0])
                }
            }
            _ => Fact::UNKNOWN,
        })
    }

    /// `"items"` / `"values"` when `iterable` is `state.items()` / `state.values()` of a
    /// container the index places on the host (`torch.load(path, map_location="cpu")`).
    fn host_container_view(&self, iterable: Node<'_>, depth: usize) -> Option<&'static str> {
        let (function, arguments) = syntax::call_parts(syntax::unparenthesize(iterable))?;
        if arguments.named_child_count() != 0 || function.is_not(kind::ATTRIBUTE) {
            return None;
        }
        let view = match node_text(function.field("attribute")?, self.source) {
            "items" => "items",
            "values" => "values",
            _ => return None,
        };
        let container = self.fact_at_depth(function.field("object")?, depth + 1);
        // `torch.load(p, map_location="cpu")["model"].items()`: an entry of loaded host state
        // reads as a host tensor, but a tensor has no `.items()`, so this entry is a nested
        // state dict, on the host like everything loaded with it.
        let nested_state = container.kind == ValueKind::Tensor && view == "items";
        ((container.kind == ValueKind::Container || nested_state)
            && container.device == Device::Cpu)
            .then_some(view)
    }

    /// The closest ancestor of `node` (or `node` itself) whose kind is one of `kinds`, not
    /// looking past the enclosing function, class or lambda.
    pub fn enclosing(&self, node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
        let mut current = Some(node);
        while let Some(n) = current {
            if kinds.contains(&n.kind_name()) {
                return Some(n);
            }
            if n.is_any(&[
                kind::FUNCTION_DEFINITION,
                kind::CLASS_DEFINITION,
                kind::LAMBDA,
            ]) {
                return None;
            }
            current = self.parent(n);
        }
        None
    }

    /// Whether `node` (an expression) only feeds a check that raises, an input check mostly: it
    /// sits in the test of an `assert`, or in the condition of an `if`/`elif` whose branch ends
    /// by raising (`if labels.max() >= vocab_size: raise ValueError(…)`). The test still runs every time its
    /// statement does (only the branch is an error branch), so a sync there costs as much as
    /// anywhere; what differs is the fix: dropping the check, or making it opt-in.
    pub fn in_raising_check(&self, node: Node<'t>) -> bool {
        let mut child = node;
        let mut current = self.parent(node);
        for _ in 0..MAX_EXPR_DEPTH * 4 {
            let Some(parent) = current else {
                return false;
            };
            match parent.kind_key() {
                kind::ASSERT_STATEMENT => {
                    // The test, not the message (`assert ok, f"{x.item()}"`).
                    return parent
                        .named_child(0)
                        .is_some_and(|test| test.id() == child.id());
                }
                kind::IF_STATEMENT | kind::ELIF_CLAUSE => {
                    let is_condition = parent
                        .field("condition")
                        .is_some_and(|condition| condition.id() == child.id());
                    return is_condition
                        && parent.field("consequence").is_some_and(|body| {
                            guards::is_error_branch(body, parent, self.source)
                        });
                }
                kind::BLOCK
                | kind::MODULE
                | kind::FUNCTION_DEFINITION
                | kind::CLASS_DEFINITION
                | kind::LAMBDA
                | kind::EXPRESSION_STATEMENT
                | kind::RETURN_STATEMENT => return false,
                _ => {}
            }
            child = parent;
            current = self.parent(parent);
        }
        false
    }

    /// The qualified name an expression refers to through imports: `T.zeros` → `torch.zeros`,
    /// `F.interpolate` → `torch.nn.functional.interpolate`, `xm.mark_step` →
    /// `torch_xla.core.xla_model.mark_step`. `None` if the root name is not an import.
    pub fn qualified_name(&self, expr: Node<'_>) -> Option<String> {
        if let Some((id, answer)) = &*self.qualified_name_memo.borrow()
            && *id == expr.id()
        {
            return answer.clone();
        }
        let answer = self.resolve_qualified_name(expr);
        *self.qualified_name_memo.borrow_mut() = Some((expr.id(), answer.clone()));
        answer
    }

    fn resolve_qualified_name(&self, expr: Node<'_>) -> Option<String> {
        // Most expressions rules ask about are not rooted in an import (`x.view`, `self.proj`):
        // resolve the root name before allocating the parts.
        let root = syntax::dotted_root(expr)?;
        let Some(Binding::Import(module)) = self.lookup(node_text(root, self.source)) else {
            return None;
        };
        let parts = syntax::dotted_parts(expr, self.source)?;
        let mut qualified = module.clone();
        for part in &parts[1..] {
            qualified.push('.');
            qualified.push_str(part);
        }
        Some(qualified)
    }

    /// What a bare name refers to when an import bound it (`xm` → `torch_xla.core.xla_model`).
    pub fn import_of(&self, name: &str) -> Option<&str> {
        match self.lookup(name) {
            Some(Binding::Import(module)) => Some(module.as_str()),
            _ => None,
        }
    }

    /// Whether a function of this name is passed to `torch.compile` / `torch_xla.compile`
    /// somewhere in the file (decorated functions are seen through [`Self::hot_path`]).
    pub fn is_compiled_name(&self, name: &str) -> bool {
        self.compiled_names.contains(name)
    }

    /// The qualified name of a call's target, if it resolves through imports.
    pub fn call_qualified_name(&self, call: Node<'_>) -> Option<String> {
        let (function, _) = syntax::call_parts(call)?;
        self.qualified_name(function)
    }

    /// The innermost reason the current node runs on every step, if any.
    pub fn hot_path(&self) -> Option<HotPath> {
        // Throttled code and step closures run once every N steps or after the step.
        if self.in_cold_code() {
            return None;
        }
        for frame in self.frames.iter().rev() {
            match frame {
                Frame::Loop {
                    hot: true,
                    decodes: true,
                    ..
                } => return Some(HotPath::DecodeLoop),
                Frame::Loop {
                    hot: true,
                    trains: false,
                    ..
                } => return Some(HotPath::BatchLoop),
                Frame::Loop { hot: true, .. } => return Some(HotPath::TrainingLoop),
                Frame::Function { hot: Some(hot), .. } => return Some(*hot),
                _ => {}
            }
        }
        // An excerpt's code is what its poster asks about, cut from code that runs on the TPU.
        self.excerpt.then_some(HotPath::Excerpt)
    }

    /// Whether the current node is inside a loop (any loop) within the current function.
    pub fn in_loop(&self) -> bool {
        if let Some(frame) = self.frames.iter().next_back() {
            match frame {
                Frame::Loop { .. } => return true,
                Frame::Function { .. } | Frame::Class(_) => return false,
            }
        }
        false
    }

    /// Whether the current node repeats with its loop outside hot paths: inside a loop of the
    /// current function (or of module-level code) that is not an epoch loop around a training
    /// or loader loop (per-epoch code runs a few times per run), and off throttles.
    pub fn in_repeating_loop(&self) -> bool {
        !self.in_cold_code()
            && matches!(
                self.frames.iter().next_back(),
                Some(Frame::Loop { outer: false, .. })
            )
    }

    /// Whether the current node is straight-line module-level code (no function, class, loop or
    /// lambda around it, off throttles) that runs ahead of a step marker written later at module
    /// level (`xm.mark_step()`, `torch_xla.sync()`; `FileFacts::module_step_markers`) with no
    /// module-level loop in between. A script or reproducer marks there where its graph should
    /// run: a host read before the marker runs the pending graph early, as its own compiled
    /// execution, and the marker then runs the rest (pytorch/xla#3429: `t or 1.0` compiled and
    /// executed at that line). Code after the last marker, or before a loop that ends with its
    /// own marker, reads results and is left alone.
    pub fn ahead_of_module_step_marker(&self) -> bool {
        let Some(current) = self.ancestors.last() else {
            return false;
        };
        if !self.frames.is_empty()
            || self.in_cold_code()
            || self.ancestors.iter().any(|node| node.is(kind::LAMBDA))
        {
            return false;
        }
        let start = current.start_byte();
        let file = self.file_facts();
        file.module_step_markers.iter().any(|&marker| {
            marker > start
                && !file
                    .module_loops
                    .iter()
                    .any(|&loop_start| loop_start > start && loop_start < marker)
        })
    }

    /// Name of the innermost enclosing function, and whether it is a method of an `nn.Module`.
    pub fn function(&self) -> Option<FunctionContext<'_>> {
        self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Function { name, class, .. } => Some(FunctionContext {
                name,
                is_method_of_module: class
                    .and_then(|index| self.classes.get(index))
                    .is_some_and(|c| c.is_module),
            }),
            _ => None,
        })
    }

    /// The name of the innermost class around the current node.
    pub fn enclosing_class_name(&self) -> Option<&'t str> {
        let class = self
            .ancestors
            .iter()
            .rev()
            .find(|a| a.is(kind::CLASS_DEFINITION))?;
        class.field("name").map(|n| node_text(n, self.source))
    }

    /// Whether the current node is inside an `nn.Module` subclass's body (any method).
    pub fn in_module_class(&self) -> bool {
        self.frames.iter().rev().any(|frame| match frame {
            Frame::Class(index) => self.classes.get(*index).is_some_and(|c| c.is_module),
            _ => false,
        })
    }

    /// What the index believes about the value of `expr` at this point of the traversal.
    pub fn fact(&self, expr: Node<'_>) -> Fact {
        self.fact_at_depth(expr, 0)
    }

    fn fact_at_depth(&self, expr: Node<'_>, depth: usize) -> Fact {
        if depth > MAX_EXPR_DEPTH {
            return Fact::UNKNOWN;
        }
        let source = self.source;
        let origin = Some((expr.start_byte(), expr.end_byte()));
        match expr.kind_key() {
            kind::IDENTIFIER => match self.lookup(node_text(expr, source)) {
                _ if let Some(element) = self.comprehension_target_fact(expr, depth) => element,
                Some(Binding::Value(fact))
                    if fact.is_tensor() && self.isinstance_excludes_tensor(expr) =>
                {
                    Fact::UNKNOWN
                }
                Some(Binding::Value(fact)) => self.before_its_move(*fact, expr),
                Some(Binding::Import(_)) | Some(Binding::Class(_)) | Some(Binding::Function(_)) => {
                    Fact::of(ValueKind::Namespace)
                }
                // In an excerpt (a file without imports), a name it never binds is a value of
                // the code it was cut from, which runs on the TPU: taken for a device tensor, as
                // a hot function's parameter is (Python's builtins excepted).
                None if self.excerpt
                    && !torch_api::PYTHON_BUILTINS.contains(&node_text(expr, source)) =>
                {
                    Fact::tensor(Device::Accelerator, origin)
                        .with_evidence(Evidence::GuessedParameter)
                }
                None => Fact::UNKNOWN,
            },
            kind::PARENTHESIZED_EXPRESSION => expr
                .named_child(0)
                .map_or(Fact::UNKNOWN, |inner| self.fact_at_depth(inner, depth + 1)),
            // `None` is a Python value here: a name bound to it holds no tensor.
            kind::NONE => Fact::of(ValueKind::Scalar),
            // `{k: v.to(device) for k, v in batch.items()}`: a batch whose tensors are on the
            // device, like a device loader's batch (`bind_batch`); `batch["labels"]` is one.
            kind::DICTIONARY_COMPREHENSION if self.moves_values_to_accelerator(expr, depth) => {
                Fact::tensor(Device::Accelerator, origin)
            }
            _ if let Some(kind) = facts::literal_kind(expr) => Fact::of(kind),
            kind::CALL => self.call_fact(expr, depth),
            kind::ATTRIBUTE => self.attribute_fact(expr, depth),
            kind::SUBSCRIPT => {
                let value = expr
                    .field("value")
                    .map_or(Fact::UNKNOWN, |v| self.fact_at_depth(v, depth + 1));
                // A tensor has no string keys: `states["n_blocks"]` of a parameter annotated
                // `torch.Tensor` reads a dict the annotation misnames. (A guessed `batch["x"]` or
                // a model output's `out["logits"]` keep their tensors: the guess and the
                // output are about the values, not the container.)
                let misnamed_dict = value.evidence == Evidence::Annotation
                    && expr
                        .field("subscript")
                        .is_some_and(|index| index.is(kind::STRING));
                match value.kind {
                    ValueKind::Tensor if misnamed_dict => Fact::UNKNOWN,
                    ValueKind::Tensor => Fact::tensor(value.device, origin),
                    ValueKind::NumpyArray => Fact::of(ValueKind::NumpyArray),
                    // `x.shape[-1]`: a Python int (`x.shape[1:]`, a `torch.Size`, is no tensor).
                    ValueKind::Container
                        if expr
                            .field("value")
                            .is_some_and(|v| self.is_tensor_shape(v, depth + 1)) =>
                    {
                        Fact::of(ValueKind::Scalar)
                    }
                    // `state["w"]` of state loaded onto the host.
                    ValueKind::Container if value.device == Device::Cpu => {
                        Fact::tensor(Device::Cpu, origin)
                    }
                    _ => Fact::UNKNOWN,
                }
            }
            kind::COMPARISON_OPERATOR if is_identity_or_membership(expr, source) => {
                Fact::of(ValueKind::Scalar)
            }
            kind::BINARY_OPERATOR | kind::COMPARISON_OPERATOR => {
                let mut result: Option<Fact> = None;
                let mut numpy = false;
                // Each operand's fact is computed once: `t + t + … + t` nests left-deep.
                let mut python_numbers = true;
                for operand in expr.named_nodes() {
                    let fact = self.fact_at_depth(operand, depth + 1);
                    python_numbers &= fact.kind == ValueKind::Scalar;
                    if fact.is_tensor() {
                        result = Some(match result {
                            Some(previous) => {
                                Fact::tensor(previous.device.merge(fact.device), origin)
                            }
                            None => Fact::tensor(fact.device, origin),
                        });
                    } else if fact.kind == ValueKind::NumpyArray {
                        numpy = true;
                    }
                }
                match result {
                    Some(fact) => fact,
                    None if numpy => Fact::of(ValueKind::NumpyArray),
                    // `self.num_classes + 5`, `x.shape[1] // 2`: arithmetic and comparisons of
                    // Python numbers are Python numbers.
                    None if python_numbers => Fact::of(ValueKind::Scalar),
                    None => Fact::UNKNOWN,
                }
            }
            kind::UNARY_OPERATOR => expr
                .field("argument")
                .map_or(Fact::UNKNOWN, |a| self.fact_at_depth(a, depth + 1)),
            kind::NOT_OPERATOR | kind::BOOLEAN_OPERATOR => Fact::UNKNOWN,
            kind::CONDITIONAL_EXPRESSION => {
                let branches: Vec<Node<'_>> = expr.named_nodes().collect();
                match (branches.first(), branches.get(2)) {
                    (Some(a), Some(b)) => {
                        let (a, b) = (
                            self.fact_at_depth(*a, depth + 1),
                            self.fact_at_depth(*b, depth + 1),
                        );
                        if a.kind == b.kind {
                            Fact {
                                kind: a.kind,
                                device: a.device.merge(b.device),
                                origin,
                                ..Fact::UNKNOWN
                            }
                        } else {
                            Fact::UNKNOWN
                        }
                    }
                    _ => Fact::UNKNOWN,
                }
            }
            _ => Fact::UNKNOWN,
        }
    }

    /// Whether the name `expr` is read in a branch that runs only when it is not a tensor (`if
    /// not isinstance(images, Tensor):`, the `else:` of `if isinstance(x, torch.Tensor):`),
    /// within the current function: an annotation `Union[Tensor, List[Tensor]]` or a guess then
    /// says nothing about it there.
    fn isinstance_excludes_tensor(&self, expr: Node<'_>) -> bool {
        /// How many enclosing nodes are examined, and how far below the traversal's current
        /// node `expr` may lie: statements nest far less deeply, and a bound keeps a
        /// 10,000-deep expression linear.
        const MAX_LEVELS: usize = 64;
        let Some(&current) = self.ancestors.last() else {
            return false;
        };
        let range = expr.byte_range();
        if range.start < current.start_byte() || current.end_byte() < range.end {
            return false;
        }
        // From the current node down to `expr` (a rule asks about a part of the node it visits).
        let mut below = vec![current];
        while let Some(&last) = below.last()
            && last.id() != expr.id()
        {
            match last.child_with_descendant(expr) {
                Some(next) if below.len() <= MAX_LEVELS => below.push(next),
                _ => return false,
            }
        }
        let name = node_text(expr, self.source);
        // One list of the two parts rather than a `chain` of them (whose adapters cost the
        // WebAssembly module room).
        let mut path = below;
        path.reverse();
        path.extend(
            self.ancestors[..self.ancestors.len() - 1]
                .iter()
                .rev()
                .take(MAX_LEVELS),
        );
        let mut path = path.into_iter();
        let Some(mut node) = path.next() else {
            return false;
        };
        for parent in path {
            if matches!(
                node.kind_name(),
                "function_definition" | "lambda" | "class_definition"
            ) {
                return false;
            }
            if guards::excludes_tensor_within(node, parent, range.clone(), name, self.source) {
                return true;
            }
            node = parent;
        }
        false
    }

    /// A tensor name the current function sends to a device later (`x.to(device)`,
    /// `x = x.cuda()`) is still on the host before that move, unless what the index knows says
    /// it is on a device already: hard-coded CUDA, a model's output, a factory with `device=`
    /// (see `FunctionSummary::host_until_moved`; an annotated parameter, or an operation on one,
    /// is no such evidence outside `forward`, step and compiled functions).
    fn before_its_move(&self, fact: Fact, name: Node<'_>) -> Fact {
        if fact.kind != ValueKind::Tensor
            || matches!(fact.device, Device::Cpu | Device::Cuda)
            || matches!(
                fact.evidence,
                Evidence::ModuleCall | Evidence::Factory | Evidence::FlowsIntoBackward
            )
        {
            return fact;
        }
        let frame = self.frames.iter().rev().find_map(|frame| match frame {
            Frame::Function { summary, hot, .. } => Some((*summary, *hot)),
            _ => None,
        });
        // `forward`'s and a step function's inputs are the device's: a move there is defensive
        // (`lengths.to(x.device)` for a model split over devices), not from the host.
        let Some(summary) = frame
            .filter(|(_, hot)| hot.is_none() || *hot == Some(HotPath::CalledFromLoop))
            .and_then(|(summary, _)| summary)
            .and_then(|i| self.summaries.functions.get(i))
        else {
            return fact;
        };
        let (text, at) = (node_text(name, self.source), name.start_byte());
        if summary
            .host_until_moved
            .iter()
            .any(|(moved, range)| moved == text && range.contains(&at))
        {
            return Fact {
                device: Device::Cpu,
                ..fact
            };
        }
        fact
    }

    fn attribute_fact(&self, expr: Node<'_>, depth: usize) -> Fact {
        let source = self.source;
        let (Some(object), Some(attribute)) = (expr.field("object"), expr.field("attribute"))
        else {
            return Fact::UNKNOWN;
        };
        let attribute = node_text(attribute, source);
        if object.is(kind::IDENTIFIER) && syntax::text_is(object, source, "self") {
            if let Some(class) = self.current_method_class()
                && let Some(fact) = self
                    .classes
                    .get(class)
                    .and_then(|c| c.attributes.get(attribute))
            {
                return *fact;
            }
            return Fact::UNKNOWN;
        }
        if let Some(qualified) = self.qualified_name(expr)
            && (qualified.starts_with("torch.") || qualified.starts_with("numpy."))
        {
            return Fact::of(ValueKind::Namespace);
        }
        let object_fact = self.fact_at_depth(object, depth + 1);
        match object_fact.kind {
            ValueKind::Tensor => match attribute {
                // `.values` / `.indices` of a reduction's named tuple (`d.max(dim=1).values`,
                // `x.topk(k).indices`, `x.sort().values`): tensors where the input was.
                "T" | "mT" | "H" | "mH" | "data" | "grad" | "real" | "imag" | "values"
                | "indices" => Fact::tensor(
                    object_fact.device,
                    Some((expr.start_byte(), expr.end_byte())),
                ),
                "shape" => Fact::of(ValueKind::Container),
                "device" => Fact::of(ValueKind::DeviceObject),
                // `x.dtype`, `x.ndim`: descriptions of the tensor, never tensors themselves.
                _ if torch_api::TENSOR_METADATA_ATTRIBUTES.contains(&attribute) => {
                    Fact::of(ValueKind::Scalar)
                }
                // A field of a model's output (`outputs.logits`, `out.last_hidden_state`), also
                // of an output known by what it flows into (`loss = outputs.loss`).
                _ if matches!(
                    object_fact.evidence,
                    Evidence::ModuleCall | Evidence::FlowsIntoBackward
                ) =>
                {
                    Fact::tensor(
                        object_fact.device,
                        Some((expr.start_byte(), expr.end_byte())),
                    )
                    .with_evidence(object_fact.evidence)
                }
                _ => Fact::of(ValueKind::Scalar),
            },
            ValueKind::Module => match attribute {
                "weight" | "bias" => Fact::tensor(Device::Accelerator, None),
                // `loss_fn.logit_scale` of `loss_fn = ClipLoss().to(device)`, a module class of
                // this file whose `__init__` made it a parameter or buffer: it moved with the
                // module.
                _ if object_fact.device == Device::Accelerator
                    && let Some(class) = self.module_class_of(object_fact)
                    && let Some(member) = self
                        .classes
                        .get(class)
                        .and_then(|c| c.attributes.get(attribute))
                    && member.is_tensor()
                    && member.device == Device::Accelerator =>
                {
                    Fact::tensor(
                        Device::Accelerator,
                        Some((expr.start_byte(), expr.end_byte())),
                    )
                }
                // `ddp_model.module`, `compiled._orig_mod`: the wrapped module, where the
                // wrapper is.
                "module" | "_orig_mod" => Fact {
                    kind: ValueKind::Module,
                    device: object_fact.device,
                    origin: Some((expr.start_byte(), expr.end_byte())),
                    ..Fact::UNKNOWN
                },
                _ => Fact::UNKNOWN,
            },
            ValueKind::NumpyArray => match attribute {
                "T" => Fact::of(ValueKind::NumpyArray),
                _ => Fact::of(ValueKind::Scalar),
            },
            _ => Fact::UNKNOWN,
        }
    }

    /// The module class of this file a module fact was constructed from: its origin is the
    /// constructor call (`ClipLoss()`; `.to(device)` and the other self-returning methods keep
    /// the receiver's origin).
    fn module_class_of(&self, module: Fact) -> Option<usize> {
        let (start, end) = module.origin?;
        let call = self.node_at(start, end)?;
        let (function, _) = syntax::call_parts(call)?;
        if function.is_not(kind::IDENTIFIER) {
            return None;
        }
        match self.lookup(node_text(function, self.source)) {
            Some(Binding::Class(index))
                if self.classes.get(*index).is_some_and(|c| c.is_module) =>
            {
                Some(*index)
            }
            _ => None,
        }
    }

    fn call_fact(&self, call: Node<'_>, depth: usize) -> Fact {
        let source = self.source;
        let Some((function, arguments)) = syntax::call_parts(call) else {
            return Fact::UNKNOWN;
        };
        let origin = Some((call.start_byte(), call.end_byte()));
        if let Some(qualified) = self.qualified_name(function) {
            return self.qualified_call_fact(&qualified, arguments, origin, depth);
        }
        match function.kind_key() {
            kind::IDENTIFIER => {
                let name = node_text(function, source);
                // `self(x)` in a method of an `nn.Module` subclass runs its `forward`: a tensor
                // (or a tuple or model output of tensors) wherever the call is, `generate` and
                // `validation_step` as much as `training_step`.
                if name == "self" && self.lookup(name).is_none() && self.in_module_method() {
                    return Fact::tensor(Device::Accelerator, origin)
                        .with_evidence(Evidence::ModuleCall);
                }
                match self.lookup(name) {
                    Some(Binding::Class(index)) => {
                        if self.classes.get(*index).is_some_and(|c| c.is_module) {
                            Fact {
                                kind: ValueKind::Module,
                                device: Device::Cpu,
                                origin,
                                ..Fact::UNKNOWN
                            }
                        } else {
                            Fact::UNKNOWN
                        }
                    }
                    Some(Binding::Value(fact)) if fact.kind == ValueKind::Module => {
                        // A module applied to a CUDA tensor runs on CUDA (an evaluation left on
                        // the GPU): its output is no XLA tensor.
                        let on_cuda = syntax::positional_args(arguments).first().is_some_and(|a| {
                            let argument = self.fact_at_depth(*a, depth + 1);
                            argument.is_tensor() && argument.device == Device::Cuda
                        });
                        let device = if on_cuda {
                            Device::Cuda
                        } else {
                            Device::Accelerator
                        };
                        Fact::tensor(device, origin).with_evidence(Evidence::ModuleCall)
                    }
                    Some(Binding::Function(id)) => self.summary_return(*id, origin),
                    // `criterion(logits, labels)`, `model(images)` with an unknown callable (a
                    // parameter): applied to a device tensor, it is taken to be a module or loss.
                    // A hot function's parameter (or an excerpt's free name) guessed to be a
                    // tensor is no tensor once it is called: tensors are not callable.
                    Some(Binding::Value(fact))
                        if (fact.kind == ValueKind::Unknown
                            || fact.evidence == Evidence::GuessedParameter)
                            && self.first_argument_on_device(arguments, depth) =>
                    {
                        Fact::tensor(Device::Accelerator, origin)
                            .with_evidence(Evidence::ModuleCall)
                    }
                    _ => match name {
                        "len" | "int" | "float" | "bool" | "str" | "round" | "abs" | "max"
                        | "min" | "sum" | "isinstance" | "hasattr" | "repr" => {
                            if matches!(name, "max" | "min" | "sum" | "abs") {
                                // `max(t1, t2)` of tensors is a tensor; of ints an int.
                                let any_tensor = syntax::positional_args(arguments)
                                    .iter()
                                    .any(|a| self.fact_at_depth(*a, depth + 1).is_tensor());
                                if any_tensor {
                                    return Fact::UNKNOWN;
                                }
                            }
                            Fact::of(ValueKind::Scalar)
                        }
                        "list" | "tuple" | "dict" | "set" | "range" | "zip" | "enumerate"
                        | "sorted" => Fact::of(ValueKind::Container),
                        _ => Fact::UNKNOWN,
                    },
                }
            }
            kind::ATTRIBUTE => {
                let (Some(object), Some(method)) =
                    (function.field("object"), function.field("attribute"))
                else {
                    return Fact::UNKNOWN;
                };
                let method = node_text(method, source);
                let receiver = self.fact_at_depth(object, depth + 1);
                match receiver.kind {
                    ValueKind::Tensor => {
                        if torch_api::NON_TENSOR_METHODS.contains(&method) {
                            return match method {
                                "numpy" => Fact::of(ValueKind::NumpyArray),
                                "tolist" => Fact::of(ValueKind::Container),
                                _ => Fact::of(ValueKind::Scalar),
                            };
                        }
                        let device = match method {
                            "cuda" => Device::Cuda,
                            "cpu" => Device::Cpu,
                            "to" => self
                                .device_argument(arguments, true, depth)
                                .unwrap_or(receiver.device),
                            // `t.type_as(x)` takes `x`'s dtype *and* device.
                            "type_as" => syntax::positional_args(arguments)
                                .first()
                                .map(|other| self.fact_at_depth(*other, depth + 1))
                                .filter(Fact::is_tensor)
                                .map_or(Device::Unknown, |fact| fact.device),
                            _ => receiver.device,
                        };
                        Fact::tensor(device, origin)
                    }
                    ValueKind::Module => {
                        if torch_api::MODULE_SELF_METHODS.contains(&method) {
                            let device = match method {
                                "cuda" => Device::Cuda,
                                "cpu" => Device::Cpu,
                                "to" => self
                                    .device_argument(arguments, true, depth)
                                    .unwrap_or(receiver.device),
                                _ => receiver.device,
                            };
                            Fact {
                                kind: ValueKind::Module,
                                device,
                                origin: receiver.origin,
                                ..Fact::UNKNOWN
                            }
                        } else if matches!(
                            method,
                            "parameters"
                                | "named_parameters"
                                | "state_dict"
                                | "modules"
                                | "children"
                        ) {
                            Fact::of(ValueKind::Container)
                        } else if node_text(object, source) != "self"
                            && let Some(id) = self.only_method_named(method)
                        {
                            // `model.score(h, r, t)` on a module, where one class of the file
                            // defines `score`: what that method returns.
                            self.summary_return(id, origin)
                        } else {
                            Fact::UNKNOWN
                        }
                    }
                    // `pl.ParallelLoader(loader, [device]).per_device_loader(device)`: the
                    // loader of one device, whose batches are on it (as `MpDeviceLoader`'s).
                    ValueKind::DataLoader
                        if receiver.device == Device::Accelerator
                            && method == "per_device_loader" =>
                    {
                        Fact { origin, ..receiver }
                    }
                    ValueKind::NumpyArray => match method {
                        "item" => Fact::of(ValueKind::Scalar),
                        "tolist" => Fact::of(ValueKind::Container),
                        _ => Fact::of(ValueKind::NumpyArray),
                    },
                    // `state.get("w")` / `state.pop("w")` of state loaded onto the host.
                    ValueKind::Container
                        if receiver.device == Device::Cpu && matches!(method, "get" | "pop") =>
                    {
                        Fact::tensor(Device::Cpu, origin)
                    }
                    // `x.argmax(-1).cpu()`: a tensor method's result copied to the host, whatever
                    // `x` is (the method says it is a tensor). So is `g.cpu()` of an unknown `g`:
                    // only tensors and modules have `.cpu()`, and either is then on the host
                    // (GEM's `g.cpu().contiguous().view(-1).double().numpy()` for quadprog).
                    ValueKind::Unknown if method == "cpu" && arguments.named_child_count() == 0 => {
                        Fact::tensor(Device::Cpu, origin)
                    }
                    _ => {
                        // `self.layer(x)` where `self.layer` is a submodule.
                        let callee = self.fact_at_depth(function, depth + 1);
                        if callee.kind == ValueKind::Module {
                            Fact::tensor(Device::Accelerator, origin)
                                .with_evidence(Evidence::ModuleCall)
                        } else if syntax::text_is(object, source, "self")
                            && let Some(id) = self.method_summary(method)
                        {
                            self.summary_return(id, origin)
                        } else if receiver.kind == ValueKind::Unknown
                            && node_text(object, source) != "self"
                            && let Some(id) = self.only_method_named(method)
                        {
                            // `scheduler.step(noise_pred, i, latents)` on a parameter of unknown
                            // kind, where one class of the file defines `step`: the object is most
                            // likely an instance of it (the call graph joins by name too).
                            self.summary_return(id, origin)
                        } else if syntax::text_is(object, source, "self")
                            && callee.kind == ValueKind::Unknown
                            && self.current_method_class().is_none_or(|class| {
                                self.classes
                                    .get(class)
                                    .is_some_and(|c| c.module_without_constructor)
                            })
                            && self.first_argument_on_device(arguments, depth)
                        {
                            // `self.relu(h)` in a method posted without its class (a bug
                            // report's `def forward(self, x):`): a callable attribute applied to
                            // a device tensor is taken to be a submodule, like `criterion(x, y)`.
                            // Inside a class the attribute may be an inherited method returning
                            // anything (`self.pad_input(x)` → `(x, rest)`), so it stays unknown,
                            // unless the class derives from `torch.nn.Module` itself and has no
                            // `__init__`: the excerpt left out the constructor that set it.
                            Fact::tensor(Device::Accelerator, origin)
                                .with_evidence(Evidence::ModuleCall)
                        } else {
                            Fact::UNKNOWN
                        }
                    }
                }
            }
            _ => Fact::UNKNOWN,
        }
    }

    /// Whether a call's first positional argument is a tensor on the device (what makes an
    /// unknown callable a module or a loss, in [`Self::call_fact`]).
    fn first_argument_on_device(&self, arguments: Node<'_>, depth: usize) -> bool {
        syntax::positional_args(arguments).first().is_some_and(|a| {
            let argument = self.fact_at_depth(*a, depth + 1);
            argument.is_tensor() && argument.device == Device::Accelerator
        })
    }

    fn qualified_call_fact(
        &self,
        qualified: &str,
        arguments: Node<'_>,
        origin: Option<(usize, usize)>,
        depth: usize,
    ) -> Fact {
        // Loaded state placed on the host: `torch.load(p, map_location="cpu")`,
        // `safetensors.torch.load_file(p)` (its device defaults to the CPU). Its tensors are host
        // tensors (a container that says where its tensors live).
        if qualified == "torch.load" || qualified == "safetensors.torch.load_file" {
            let device = syntax::argument(arguments, 1, "map_location", self.source)
                .or_else(|| syntax::keyword_arg(arguments, "device", self.source))
                .and_then(|d| syntax::string_value(d, self.source));
            let on_host = match device.as_deref() {
                Some(device) => device == "cpu",
                None => qualified == "safetensors.torch.load_file",
            };
            if on_host {
                return Fact {
                    kind: ValueKind::Container,
                    device: Device::Cpu,
                    origin,
                    ..Fact::UNKNOWN
                };
            }
        }
        // `model = DDP(model)`, `model = torch.compile(model)`: the wrapper is a module placed
        // where the wrapped one is.
        if torch_api::MODULE_WRAPPERS.contains(&qualified)
            && let Some(wrapped) = syntax::positional_args(arguments)
                .first()
                .map(|first| self.fact_at_depth(*first, depth + 1))
                .filter(|fact| fact.kind == ValueKind::Module)
        {
            return Fact { origin, ..wrapped };
        }
        if torch_api::MODULE_WRAPPERS_ONTO_XLA.contains(&qualified) {
            return Fact {
                kind: ValueKind::Module,
                device: Device::Accelerator,
                origin,
                ..Fact::UNKNOWN
            };
        }
        if let Some(function) = qualified.strip_prefix("torch.") {
            if torch_api::TENSOR_FACTORIES.contains(&function)
                || torch_api::LEGACY_TENSOR_CONSTRUCTORS.contains(&function)
            {
                let device = if function == "from_numpy" {
                    Device::Cpu
                } else if torch_api::ARGUMENT_PLACED_FACTORIES.contains(&function) {
                    syntax::positional_args(arguments)
                        .first()
                        .map_or(Device::Unknown, |a| {
                            self.fact_at_depth(*a, depth + 1).device
                        })
                } else {
                    self.device_argument(arguments, false, depth)
                        .unwrap_or(Device::Cpu)
                };
                return Fact::tensor(device, origin);
            }
            if torch_api::LIKE_FACTORIES.contains(&function) {
                let device = match self.device_argument(arguments, false, depth) {
                    Some(device) => device,
                    None => syntax::positional_args(arguments)
                        .first()
                        .map_or(Device::Unknown, |a| {
                            self.fact_at_depth(*a, depth + 1).device
                        }),
                };
                return Fact::tensor(device, origin);
            }
            if function == "device" {
                return Fact::of(ValueKind::DeviceObject);
            }
            if torch_api::is_non_tensor_function(function) {
                return Fact::UNKNOWN;
            }
            if function.starts_with("utils.data.") && function.ends_with("DataLoader") {
                return Fact {
                    kind: ValueKind::DataLoader,
                    device: Device::Cpu,
                    origin,
                    ..Fact::UNKNOWN
                };
            }
            if function.starts_with("optim.") {
                return Fact::of(ValueKind::Optimizer);
            }
            if let Some(rest) = function.strip_prefix("nn.") {
                if rest.starts_with("functional.") {
                    let device = self.first_tensor_device(arguments, depth);
                    return Fact::tensor(device, origin);
                }
                let last = rest.rsplit('.').next().unwrap_or(rest);
                if last == "Parameter" || last == "Buffer" {
                    // A parameter made in a method is a module's member and follows the module
                    // to the device. One made outside any class (a script's `phi =
                    // nn.Parameter(torch.zeros(16))` optimised by hand) is where its data is.
                    let data_on_host = self.current_method_class().is_none()
                        && syntax::positional_args(arguments)
                            .first()
                            .is_some_and(|data| {
                                let data = self.fact_at_depth(*data, depth + 1);
                                data.is_tensor() && data.device == Device::Cpu
                            });
                    let device = if data_on_host {
                        Device::Cpu
                    } else {
                        Device::Accelerator
                    };
                    return Fact::tensor(device, origin);
                }
                if !rest.contains('.') && last.starts_with(|c: char| c.is_ascii_uppercase()) {
                    return Fact {
                        kind: ValueKind::Module,
                        device: Device::Cpu,
                        origin,
                        ..Fact::UNKNOWN
                    };
                }
                return Fact::UNKNOWN;
            }
            let last = function.rsplit('.').next().unwrap_or(function);
            if last.starts_with(|c: char| c.is_ascii_lowercase())
                && torch_api::in_tensor_namespace(function)
                && !function.starts_with('_')
            {
                // `torch.div(h, 2)` of Python numbers makes a CPU scalar tensor (the ops that
                // take numbers for tensors: arithmetic and comparisons).
                if self.only_python_numbers(arguments, depth) {
                    return Fact::tensor(Device::Cpu, origin);
                }
                let device = self.first_tensor_device(arguments, depth);
                return Fact::tensor(device, origin);
            }
            return Fact::UNKNOWN;
        }
        // `box_iou(gt, anchors)`, `torchvision.ops.nms(boxes, scores, t)`: a tensor where its
        // tensor arguments are.
        if let Some(op) = qualified.strip_prefix("torchvision.ops.")
            && torch_api::TORCHVISION_TENSOR_OPS.contains(&op.rsplit('.').next().unwrap_or(op))
        {
            return Fact::tensor(self.first_tensor_device(arguments, depth), origin);
        }
        // `tqdm(loader)` iterates the loader.
        if (qualified == "tqdm" || qualified.starts_with("tqdm."))
            && let Some(first) = syntax::positional_args(arguments).first()
        {
            let inner = self.fact_at_depth(*first, depth + 1);
            if inner.kind == ValueKind::DataLoader {
                return Fact { origin, ..inner };
            }
        }
        if torch_api::is_device_loader(qualified) {
            return Fact {
                kind: ValueKind::DataLoader,
                device: Device::Accelerator,
                origin,
                ..Fact::UNKNOWN
            };
        }
        // `AutoModel.from_pretrained(...)`, `UNet2DModel.from_pretrained(...)`,
        // `timm.create_model(...)`, `torchvision.models.resnet50()`: a module on the host.
        let last = qualified.rsplit('.').next().unwrap_or("");
        let model_library = [
            "transformers.",
            "diffusers.",
            "timm.",
            "peft.",
            "torchvision.models.",
        ]
        .iter()
        .any(|prefix| qualified.starts_with(prefix));
        let is_model_class = qualified
            .rsplit('.')
            .nth(1)
            .is_some_and(|class| class.starts_with(|c: char| c.is_ascii_uppercase()));
        if model_library
            && ((last == "from_pretrained"
                && is_model_class
                && !qualified.contains("Tokenizer")
                && !qualified.contains("Processor")
                && !qualified.contains("Config")
                && !qualified.contains("Scheduler"))
                || last == "create_model"
                || (qualified.starts_with("torchvision.models.")
                    && last.starts_with(|c: char| c.is_ascii_lowercase())
                    && !last.starts_with("get_")))
        {
            return Fact {
                kind: ValueKind::Module,
                device: Device::Cpu,
                origin,
                ..Fact::UNKNOWN
            };
        }
        if qualified.starts_with("numpy.") {
            let last = qualified.rsplit('.').next().unwrap_or("");
            if last.starts_with(|c: char| c.is_ascii_lowercase()) {
                return Fact::of(ValueKind::NumpyArray);
            }
        }
        Fact::UNKNOWN
    }

    /// Whether a call's arguments are only Python numbers (literals or values the index knows
    /// to be scalars; strings excluded), with no `device=` or `out=`: at least one positional.
    fn only_python_numbers(&self, arguments: Node<'_>, depth: usize) -> bool {
        let positional = syntax::positional_args(arguments);
        !positional.is_empty()
            && syntax::keyword_arg(arguments, "device", self.source).is_none()
            && syntax::keyword_arg(arguments, "out", self.source).is_none()
            && positional.iter().all(|argument| {
                let argument = syntax::unparenthesize(*argument);
                !argument.is_any(&[kind::STRING, kind::CONCATENATED_STRING])
                    && self.fact_at_depth(argument, depth + 1).kind == ValueKind::Scalar
            })
    }

    /// The device of the first tensor argument, looking into a list or tuple argument
    /// (`torch.cat([a, b])`, `torch.stack((a, b))`).
    fn first_tensor_device(&self, arguments: Node<'_>, depth: usize) -> Device {
        syntax::spread_sequences(syntax::positional_args(arguments))
            .into_iter()
            .map(|a| self.fact_at_depth(a, depth + 1))
            .find(|fact| fact.is_tensor())
            .map_or(Device::Unknown, |fact| fact.device)
    }

    /// Whether a dictionary comprehension's values are `v.to(device)` with `device` the
    /// accelerator (`{k: v.to(self.device) for k, v in batch.items()}`).
    fn moves_values_to_accelerator(&self, comprehension: Node<'_>, depth: usize) -> bool {
        let Some(value) = comprehension
            .field("body")
            .filter(|pair| pair.is(kind::PAIR))
            .and_then(|pair| pair.field("value"))
            .map(syntax::unparenthesize)
        else {
            return false;
        };
        syntax::method_call(value)
            .is_some_and(|(_, method)| syntax::text_is(method, self.source, "to"))
            && syntax::call_parts(value).is_some_and(|(_, arguments)| {
                self.device_argument(arguments, true, depth) == Some(Device::Accelerator)
            })
    }

    /// The device named by a call's `device=` keyword, or for `.to(...)` (`positional_device`)
    /// its first positional argument.
    fn device_argument(
        &self,
        arguments: Node<'_>,
        positional_device: bool,
        depth: usize,
    ) -> Option<Device> {
        let value = syntax::keyword_arg(arguments, "device", self.source).or_else(|| {
            if positional_device {
                syntax::positional_args(arguments).first().copied()
            } else {
                None
            }
        })?;
        // `.to(torch.float32)` converts the dtype and keeps the device.
        if self.is_torch_dtype(value) {
            return None;
        }
        Some(self.device_of_expr(value, depth))
    }

    /// `torch.float32`, `torch.half`, `torch.long`, ...: a dtype, not a device.
    fn is_torch_dtype(&self, expr: Node<'_>) -> bool {
        self.qualified_name(expr)
            .as_deref()
            .and_then(|name| name.strip_prefix("torch."))
            .and_then(torch_api::canonical_dtype)
            .is_some()
    }

    /// Interprets a device expression: `"cuda:0"`, `torch.device("xla")`, `x.device`, a variable.
    pub fn device_of_expr(&self, value: Node<'_>, depth: usize) -> Device {
        let source = self.source;
        if let Some(text) = syntax::string_value(value, source) {
            return device_from_str(&text);
        }
        match value.kind_key() {
            kind::CALL => {
                let Some((function, arguments)) = syntax::call_parts(value) else {
                    return Device::Unknown;
                };
                match self.qualified_name(function).as_deref() {
                    Some("torch.device") => syntax::positional_args(arguments)
                        .first()
                        .and_then(|a| syntax::string_value(*a, source))
                        .map_or(Device::Accelerator, |s| device_from_str(&s)),
                    Some(q) if torch_api::is_accelerator_device_function(q) => Device::Accelerator,
                    _ => Device::Accelerator,
                }
            }
            kind::ATTRIBUTE => {
                let is_device_attr = value
                    .field("attribute")
                    .is_some_and(|a| syntax::text_is(a, source, "device"));
                if is_device_attr {
                    value.field("object").map_or(Device::Unknown, |o| {
                        let fact = self.fact_at_depth(o, depth + 1);
                        if fact.is_tensor() {
                            fact.device
                        } else {
                            Device::Accelerator
                        }
                    })
                } else {
                    Device::Accelerator
                }
            }
            kind::IDENTIFIER => self
                .bound_device_choice(value)
                .unwrap_or(Device::Accelerator),
            // A `dtype` passed positionally to `.to(torch.float16)` is not a device.
            _ => Device::Unknown,
        }
    }
}

impl SemanticModel<'_> {
    /// `eval_device` bound to a choice of device strings none of which is the XLA device:
    /// `torch.device("cuda" if torch.cuda.is_available() else "cpu")` or the bare choice. On a
    /// TPU machine it is the CPU, on another the GPU; either way not the accelerator a name of
    /// unknown binding is taken to be.
    fn bound_device_choice(&self, name: Node<'_>) -> Option<Device> {
        let Some(Binding::Value(fact)) = self.lookup(node_text(name, self.source)) else {
            return None;
        };
        let mut choice = self.origin_node(fact.origin?)?;
        if self.other_branch_binds_accelerator(node_text(name, self.source), choice) {
            return None;
        }
        if choice.is(kind::CALL) {
            let (function, arguments) = syntax::call_parts(choice)?;
            if self.qualified_name(function).as_deref() != Some("torch.device") {
                return None;
            }
            choice = *syntax::positional_args(arguments).first()?;
        }
        let choice = syntax::unparenthesize(choice);
        if choice.is_not(kind::CONDITIONAL_EXPRESSION) {
            return None;
        }
        let branches: Vec<Node<'_>> = choice.named_nodes().collect();
        let device = |branch: Option<&Node<'_>>| {
            branch
                .and_then(|b| syntax::string_value(*b, self.source))
                .map(|text| device_from_str(&text))
        };
        let (first, second) = (device(branches.first())?, device(branches.get(2))?);
        let accelerator = |d: Device| d == Device::Accelerator || d == Device::Unknown;
        (!accelerator(first) && !accelerator(second)).then(|| first.merge(second))
    }
}

impl<'t> SemanticModel<'t> {
    /// Whether `name = value` sits in a branch of an `if` another branch of which binds `name`
    /// to the accelerator by name (`if args.tpu: device = xm.xla_device()` / `else: device =
    /// torch.device("cuda" if … else "cpu")`): the name is then the XLA (or TPU) device
    /// whenever the code runs on one, whichever binding the index saw last.
    fn other_branch_binds_accelerator(&self, name: &str, value: Node<'t>) -> bool {
        let Some(assignment) = value.parent().filter(|parent| parent.is(kind::ASSIGNMENT)) else {
            return false;
        };
        // assignment → expression statement → block → `else` / `elif` clause or the `if`.
        let mut branch = assignment.parent().and_then(|statement| statement.parent());
        let mut if_statement = None;
        for _ in 0..2 {
            let Some(parent) = branch.and_then(|node| node.parent()) else {
                break;
            };
            if parent.is(kind::IF_STATEMENT) {
                if_statement = Some(parent);
                break;
            }
            branch = Some(parent);
        }
        let Some(if_statement) = if_statement else {
            return false;
        };
        let mut blocks: Vec<Node<'t>> = if_statement.field("consequence").into_iter().collect();
        let mut cursor = if_statement.walk();
        for clause in if_statement.children_by_field_name("alternative", &mut cursor) {
            blocks.extend(clause.field("consequence").or_else(|| clause.field("body")));
        }
        // Loops rather than a `flat_map` chain: one body instead of the adapters' instances.
        for block in blocks {
            if block.byte_range().contains(&assignment.start_byte()) {
                continue;
            }
            for statement in block.named_nodes() {
                let Some(other) = statement.named_child(0).filter(|child| {
                    statement.is(kind::EXPRESSION_STATEMENT) && child.is(kind::ASSIGNMENT)
                }) else {
                    continue;
                };
                if other.field("left").is_some_and(|left| {
                    left.is(kind::IDENTIFIER) && node_text(left, self.source) == name
                }) && other
                    .field("right")
                    .is_some_and(|right| self.names_accelerator(right))
                {
                    return true;
                }
            }
        }
        false
    }

    /// `xm.xla_device()`, `torch_xla.device()`, TorchTPU's `api.tpu_device()`,
    /// `torch.device("xla")`, `"tpu"`: the accelerator
    /// named as such (not any call, which `device_of_expr` takes for the accelerator by default).
    fn names_accelerator(&self, value: Node<'t>) -> bool {
        let value = syntax::unparenthesize(value);
        if let Some(text) = syntax::string_value(value, self.source) {
            return device_from_str(&text) == Device::Accelerator;
        }
        let Some((function, arguments)) = syntax::call_parts(value) else {
            return false;
        };
        match self.qualified_name(function).as_deref() {
            Some("torch.device") => syntax::positional_args(arguments)
                .first()
                .and_then(|argument| syntax::string_value(*argument, self.source))
                .is_some_and(|text| device_from_str(&text) == Device::Accelerator),
            Some(qualified) => torch_api::is_accelerator_device_function(qualified),
            None => false,
        }
    }
}

/// The loss in `scaler.scale(loss).backward()`: a gradient scaler's `scale` returns the loss
/// multiplied by the scale factor, so the backward runs through `loss` (the AMP idiom).
fn scaled_loss<'t>(receiver: Node<'t>, source: &str) -> Option<Node<'t>> {
    let (scaler, method) = syntax::method_call(receiver)?;
    if !syntax::text_is(method, source, "scale")
        || !node_text(scaler, source)
            .to_ascii_lowercase()
            .ends_with("scaler")
    {
        return None;
    }
    let (_, arguments) = syntax::call_parts(receiver)?;
    match syntax::positional_args(arguments).as_slice() {
        [loss] => Some(*loss),
        _ => None,
    }
}

/// `x is None`, `k in d`, `a is not b`: Python booleans whatever the operands are (comparisons
/// of objects, not of tensor elements).
pub(crate) fn is_identity_or_membership(comparison: Node<'_>, source: &str) -> bool {
    syntax::comparison_operators(comparison, source)
        .iter()
        .any(|text| text.starts_with("is") || text.ends_with("in"))
}

/// `"cuda:0"` → `Cuda`, `"cpu"` → `Cpu`, `"xla"`/`"tpu"` → `Accelerator`.
pub fn device_from_str(text: &str) -> Device {
    let kind = text.split(':').next().unwrap_or("").trim();
    match kind {
        "cuda" => Device::Cuda,
        "cpu" => Device::Cpu,
        "xla" | "tpu" => Device::Accelerator,
        _ => Device::Unknown,
    }
}

/// Whether `function` is a method posted without its class: a module-level `def` whose first
/// parameter is `self` (a bug report's `def forward(self, x):` pasted alone).
fn is_method_posted_alone(function: Node<'_>, frames: &[Frame], source: &str) -> bool {
    frames.is_empty()
        && function
            .field("parameters")
            .and_then(|parameters| parameters.named_child(0))
            .is_some_and(|first| {
                first.is(kind::IDENTIFIER) && syntax::text_is(first, source, "self")
            })
}

impl summaries::Resolver for SemanticModel<'_> {
    fn resolve(&self, expr: Node<'_>) -> Option<String> {
        self.resolve_qualified_name(expr)
    }
}

/// The condition of `parent` when it is an `if` statement and `block` its consequence (the body
/// that runs when the condition holds).
fn if_condition_of_consequence<'t>(block: Node<'t>, parent: Node<'t>) -> Option<Node<'t>> {
    if parent.is_not(kind::IF_STATEMENT)
        || parent
            .field("consequence")
            .is_none_or(|c| c.id() != block.id())
    {
        return None;
    }
    parent.field("condition")
}

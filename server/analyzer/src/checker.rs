//! The checker: one traversal of the syntax tree that keeps the semantic index current and
//! dispatches each node to the enabled rules registered for its kind.

use crate::kind;
use std::sync::LazyLock;

use tree_sitter::{Node, Tree};

use crate::diagnostic::{Diagnostic, Severity};
use crate::hash::HashMap;
use crate::prefilter::{Prefilter, PresentTokens};
use crate::registry::{RuleId, RuleMeta, rules};
use crate::semantic::{
    Backend, Fact, HardwareScope, HotPath, SemanticModel, StatementWalks, SummaryCache, WalkStep,
    name_hash,
};
use crate::settings::{LibraryCodePolicy, Settings, TestCodePolicy};
use crate::source::TextRange;
use crate::suppression::Suppressions;
use crate::syntax::NodeExt;
use crate::syntax::{self, PYTHON};

/// For every node-kind id of the grammar, the rules that registered for that kind.
static DISPATCH: LazyLock<Vec<Vec<RuleId>>> = LazyLock::new(|| {
    let language = &*PYTHON;
    let count = language.node_kind_count();
    let mut table = vec![Vec::new(); count];
    for (id, slot) in table.iter_mut().enumerate() {
        let Ok(id) = u16::try_from(id) else { break };
        if !language.node_kind_is_named(id) {
            continue;
        }
        let Some(kind) = language.node_kind_for_id(id) else {
            continue;
        };
        for (index, rule) in rules().iter().enumerate() {
            if rule.kinds.contains(&kind) {
                slot.push(RuleId(index as u16));
            }
        }
    }
    table
});

/// For every callee name a `call` rule declares ([`RuleMeta::calls`], final segments), the
/// rules that declare it, in id order (the names in the order first declared).
static CALL_DISPATCH: LazyLock<Vec<(&'static str, Vec<RuleId>)>> = LazyLock::new(|| {
    let mut table: Vec<(&'static str, Vec<RuleId>)> = Vec::new();
    let mut positions = CallNames::default();
    for (index, rule) in rules().iter().enumerate() {
        if !rule.kinds.contains(&"call") {
            continue;
        }
        let id = RuleId(index as u16);
        for entry in rule.calls {
            let name = final_segment(entry);
            let position = match positions.find(&table, name) {
                Some(position) => position,
                None => {
                    positions.add(name, table.len());
                    table.push((name, Vec::new()));
                    table.len() - 1
                }
            };
            let ids = &mut table[position].1;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    table
});

/// Callee names to their positions in a list of `(name, rules)` entries, by [`name_hash`]: a
/// hash-map type the semantic index has already (one type fewer in the WebAssembly module than
/// a `&str`-keyed map, each of which brings its own table code). A lookup compares the name
/// found, so it is exact; the declared names' hashes are distinct (`declared_callee_names_have_
/// distinct_hashes`), so no name hides another.
#[derive(Default)]
struct CallNames(HashMap<u64, usize>);

impl CallNames {
    fn add(&mut self, name: &str, position: usize) {
        self.0.insert(name_hash(name), position);
    }

    fn find(&self, entries: &[(&'static str, Vec<RuleId>)], name: &str) -> Option<usize> {
        let position = *self.0.get(&name_hash(name))?;
        (entries.get(position)?.0 == name).then_some(position)
    }
}

/// `nonzero` of `torch.nonzero`; the whole text when it has no `.`.
fn final_segment(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The ids in `a` or `b` (each sorted), sorted, into `out`.
fn merge_ids(a: &[RuleId], b: &[RuleId], out: &mut Vec<RuleId>) {
    out.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
                *x
            }
            (Some(x), Some(y)) if x < y => {
                i += 1;
                *x
            }
            (Some(x), None) => {
                i += 1;
                *x
            }
            (_, Some(y)) => {
                j += 1;
                *y
            }
            (None, None) => break,
        };
        out.push(next);
    }
}

/// Whether every node kind a rule registered for exists in the grammar (checked by the meta-tests).
pub fn unknown_kinds(rule: &RuleMeta) -> Vec<&'static str> {
    let language = &*PYTHON;
    rule.kinds
        .iter()
        .copied()
        .filter(|kind| language.id_for_node_kind(kind, true) == 0)
        .collect()
}

/// What a rule's check function sees: the source, the semantic index at this node, and a sink.
pub struct Context<'t, 'c> {
    source: &'t str,
    root: Node<'t>,
    semantic: &'c SemanticModel<'t>,
    rule: &'static RuleMeta,
    /// The file's settings (a rule may depend on the project's target versions).
    settings: &'c Settings,
    diagnostics: &'c mut Vec<Diagnostic>,
    /// When the node being dispatched is a `call`: its parts and keyword arguments, found once
    /// for all the rules registered for `call` (each field lookup walks the node's children).
    current_call: Option<&'c CallParts<'t>>,
}

/// A `call` node taken apart once for every rule that looks at it.
#[derive(Default)]
struct CallParts<'t> {
    id: usize,
    /// `(function, arguments)` as [`syntax::call_parts`] gives them.
    parts: Option<(Node<'t>, Node<'t>)>,
    /// `(object, attribute)` when the function is an attribute, as [`syntax::method_call`] gives.
    method: Option<(Node<'t>, Node<'t>)>,
    /// The `keyword_argument`s of `arguments` with their names, in order.
    keywords: Vec<(&'t str, Node<'t>)>,
    /// The written callee's final segment, as [`Context::callee_name`] gives it.
    name: Option<&'t str>,
}

impl<'t> CallParts<'t> {
    fn fill(&mut self, call: Node<'t>, source: &'t str) {
        self.id = call.id();
        self.parts = syntax::call_parts(call);
        // As `syntax::method_call`, from the parts just found.
        self.method = self.parts.and_then(|(function, _)| {
            if function.is_not(kind::ATTRIBUTE) {
                return None;
            }
            Some((function.field("object")?, function.field("attribute")?))
        });
        self.name = match (self.parts, self.method) {
            (_, Some((_, attribute))) => Some(syntax::node_text(attribute, source)),
            (Some((function, _)), None) if function.is(kind::IDENTIFIER) => {
                Some(syntax::node_text(function, source))
            }
            _ => None,
        };
        self.keywords.clear();
        if let Some((_, arguments)) = self.parts {
            for child in arguments.named_nodes() {
                if child.is(kind::KEYWORD_ARGUMENT)
                    && let Some(name) = child.field("name")
                {
                    self.keywords.push((syntax::node_text(name, source), child));
                }
            }
        }
    }
}

impl<'t> Context<'t, '_> {
    pub fn source(&self) -> &'t str {
        self.source
    }

    /// The parent of `node` (cheap; never use `Node::parent`, which is linear in the number of
    /// siblings on the path from the root).
    pub fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        self.semantic.parent(node)
    }

    /// The closest ancestor-or-self of one of `kinds` within the enclosing function or class.
    pub fn enclosing(&self, node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
        self.semantic.enclosing(node, kinds)
    }

    /// The file's `module` node (for edits such as adding an import).
    pub fn root(&self) -> Node<'t> {
        self.root
    }

    pub fn settings(&self) -> &Settings {
        self.settings
    }

    pub fn semantic(&self) -> &SemanticModel<'t> {
        self.semantic
    }

    /// Source text of a node.
    pub fn text(&self, node: Node<'_>) -> &'t str {
        syntax::node_text(node, self.source)
    }

    /// Whether the source text of a node is `text` ([`syntax::text_is`]).
    pub fn text_is(&self, node: Node<'_>, text: &str) -> bool {
        syntax::text_is(node, self.source, text)
    }

    pub fn backend(&self) -> Backend {
        self.semantic.backend()
    }

    /// Qualified name of an expression through the file's imports (`F.pad` → `torch.nn.functional.pad`).
    pub fn qualified_name(&self, expr: Node<'_>) -> Option<String> {
        self.semantic.qualified_name(expr)
    }

    /// `(function, argument_list)` of a `call` node ([`syntax::call_parts`]), remembered across
    /// the rules that look at the same call.
    pub fn call_parts(&self, call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
        match self.current_call {
            Some(memo) if memo.id == call.id() => memo.parts,
            _ => syntax::call_parts(call),
        }
    }

    /// The `keyword_argument` node named `name` in `arguments` ([`syntax::keyword_arg_node`]).
    pub fn keyword_arg_node(&self, arguments: Node<'t>, name: &str) -> Option<Node<'t>> {
        match self.current_call {
            Some(CallParts {
                parts: Some((_, current)),
                keywords,
                ..
            }) if current.id() == arguments.id() => keywords
                .iter()
                .find(|(keyword, _)| *keyword == name)
                .map(|(_, node)| *node),
            _ => syntax::keyword_arg_node(arguments, name, self.source),
        }
    }

    /// The value of keyword argument `name` in `arguments` ([`syntax::keyword_arg`]).
    pub fn keyword_arg(&self, arguments: Node<'t>, name: &str) -> Option<Node<'t>> {
        self.keyword_arg_node(arguments, name)?.field("value")
    }

    /// Name of the called method or function ([`syntax::callee_name`]).
    pub fn callee_name(&self, call: Node<'t>) -> Option<&'t str> {
        if let Some(memo) = self.current_call
            && memo.id == call.id()
        {
            return memo.name;
        }
        if call.is_not(kind::CALL) {
            return None;
        }
        if let Some((_, attribute)) = self.method_call(call) {
            return Some(self.text(attribute));
        }
        let (function, _) = self.call_parts(call)?;
        match function.kind_key() {
            kind::IDENTIFIER => Some(self.text(function)),
            kind::ATTRIBUTE => Some(self.text(function.field("attribute")?)),
            _ => None,
        }
    }

    /// For `recv.method(...)`: `(recv, method name node)` ([`syntax::method_call`]).
    pub fn method_call(&self, call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
        match self.current_call {
            Some(memo) if memo.id == call.id() => memo.method,
            _ => syntax::method_call(call),
        }
    }

    /// Whether the file's text contains `needle` anywhere (for cheap early exits), scanned once
    /// per file rather than at every node that asks.
    pub fn source_mentions(&self, needle: &'static str) -> bool {
        self.semantic
            .file_memo(("source_mentions", needle), || self.source.contains(needle))
    }

    /// What the index believes about an expression's value here.
    pub fn fact(&self, expr: Node<'_>) -> Fact {
        self.semantic.fact(expr)
    }

    pub fn hot_path(&self) -> Option<HotPath> {
        self.semantic.hot_path()
    }

    /// How often a host read repeats, for messages: "every step" on a hot path, "on every
    /// iteration" in a loop, and ahead of a module step marker, that the read is an execution
    /// of its own ([`Self::repeated_host_read`]).
    pub fn host_read_frequency(&self) -> &'static str {
        if self.hot_path() == Some(HotPath::Excerpt) {
            "each time it runs"
        } else if self.hot_path().is_some() {
            "every step"
        } else if self.semantic.in_repeating_loop() {
            "on every iteration"
        } else {
            "in an execution of its own"
        }
    }

    /// The rule's severity on a hot path, `Info` elsewhere.
    pub fn hot_path_severity(&self) -> Severity {
        if self.hot_path().is_some() {
            self.rule.severity
        } else {
            Severity::Info
        }
    }

    /// Whether a host read here repeats, and how to say where: on a hot path, the rule's severity
    /// and the hot path's description; outside hot paths, in a loop of the current function or
    /// of module-level code that no throttle guards and that is not an epoch loop
    /// ([`crate::semantic::SemanticModel::in_repeating_loop`]), information and "in a loop"
    /// (the loop runs the read once per iteration, but nothing says it runs every step). `None`
    /// for code that runs once (straight-line code, code after a loop, per-epoch code) or off
    /// the step (throttles, closures).
    pub fn repeated_host_read(&self) -> Option<(Severity, &'static str)> {
        if let Some(hot) = self.hot_path() {
            return Some((self.rule.severity, hot.describe()));
        }
        self.semantic
            .in_repeating_loop()
            .then_some((Severity::Info, "in a loop"))
    }

    /// [`Self::repeated_host_read`], and also straight-line module-level code ahead of a step
    /// marker written later at module level
    /// ([`crate::semantic::SemanticModel::ahead_of_module_step_marker`]): information, "before
    /// the step marker below". For the reads whose Python value the script goes on computing
    /// with (`.item()`, `float(t)`, a tensor condition): the value is needed before the
    /// marker, so the pending graph runs early as an execution of its own and the marker runs
    /// the rest. Prints and host copies there are the script's output, read on purpose.
    pub fn host_value_read(&self) -> Option<(Severity, &'static str)> {
        self.repeated_host_read().or_else(|| {
            self.semantic
                .ahead_of_module_step_marker()
                .then_some((Severity::Info, BEFORE_STEP_MARKER))
        })
    }

    /// The rule being run.
    pub fn rule(&self) -> &'static RuleMeta {
        self.rule
    }

    /// Records a finding with the rule's default severity; adjust the returned diagnostic to add a
    /// fix, related locations or a different severity.
    pub fn report(&mut self, range: TextRange, message: impl Into<String>) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic {
            code: self.rule.code,
            name: self.rule.name,
            message: message.into(),
            range,
            severity: self.rule.severity,
            fix: None,
            related: Vec::new(),
            tag: None,
        });
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }
}

/// Where [`Context::repeated_host_read`] places a read ahead of a module step marker.
pub const BEFORE_STEP_MARKER: &str = "before the step marker below";

/// Walks `tree` once, keeping `semantic` current: `visit(semantic, node, dispatchable)` runs for
/// every named node after `SemanticModel::enter` and before its children. `dispatchable` is false
/// inside `ERROR` nodes and on nodes containing syntax errors (except the module): rules stay
/// quiet there rather than guess. Returning `false` from `visit` stops the walk.
pub fn walk<'t>(
    tree: &'t Tree,
    semantic: &mut SemanticModel<'t>,
    mut visit: impl FnMut(&SemanticModel<'t>, Node<'t>, bool) -> bool,
) {
    walk_node(tree.root_node(), 0, semantic, &mut visit);
}

/// [`walk`] over the subtree of `node`, below `error_depth` `ERROR` nodes; `false` when `visit`
/// stopped it.
pub(crate) fn walk_node<'t>(
    node: Node<'t>,
    mut error_depth: usize,
    semantic: &mut SemanticModel<'t>,
    visit: &mut impl FnMut(&SemanticModel<'t>, Node<'t>, bool) -> bool,
) -> bool {
    let mut cursor = node.walk();
    loop {
        let node = cursor.node();
        if node.is_named() {
            if node.is_error() {
                error_depth += 1;
            }
            semantic.enter(node);
            let dispatchable = error_depth == 0 && (!node.has_error() || node.is(kind::MODULE));
            if !visit(semantic, node, dispatchable) {
                return false;
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            let node = cursor.node();
            if node.is_named() {
                semantic.leave(node);
                if node.is_error() {
                    error_depth = error_depth.saturating_sub(1);
                }
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return true;
            }
        }
    }
}

/// Runs every enabled rule over `tree` (parsed from `source`) and applies suppressions.
/// Diagnostics come back sorted by position, then code.
pub fn check_tree(source: &str, tree: &Tree, settings: &Settings) -> Vec<Diagnostic> {
    check_tree_with(source, tree, settings, Prefilter::On)
}

/// [`check_tree`], choosing whether the token prefilter ([`crate::prefilter`]) may skip rules
/// whose words the file lacks; the result is the same either way.
pub fn check_tree_with(
    source: &str,
    tree: &Tree,
    settings: &Settings,
    prefilter: Prefilter,
) -> Vec<Diagnostic> {
    let running = RunningRules::of(source, settings, prefilter);
    // No enabled rule can report (TPU901 included, which needs a `noqa`): only syntax errors.
    if !running.any() {
        return finish_syntax(Vec::new(), source, tree);
    }
    let mut dispatcher = Dispatcher::new(source, tree, settings, &running);
    let mut diagnostics = Vec::new();
    let mut suppressions = Suppressions::default();
    // Natively the traversal replays the named nodes the pre-pass's walk recorded ([`replay`]).
    // The WebAssembly module walks the tree again instead, as before: the same visits, and the
    // replay's code would take its language-server build over its size guard.
    #[cfg(not(target_arch = "wasm32"))]
    {
        let (mut semantic, steps) = SemanticModel::new_recording(source, tree, settings.backend);
        configure_model(&mut semantic, settings);
        replay(
            tree,
            &steps,
            &mut semantic,
            |semantic, node, kind, dispatchable| {
                if syntax::kind_name_with_id(node, kind) == "comment" {
                    suppressions.add_comment(node, source);
                }
                if dispatchable {
                    dispatcher.run_kind(semantic, node, kind, &mut diagnostics);
                }
            },
        );
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut semantic = SemanticModel::new(source, tree, settings.backend);
        configure_model(&mut semantic, settings);
        walk(tree, &mut semantic, |semantic, node, dispatchable| {
            if node.is(kind::COMMENT) {
                suppressions.add_comment(node, source);
            }
            if dispatchable {
                dispatcher.run(semantic, node, &mut diagnostics);
            }
            true
        });
    }
    finish(diagnostics, suppressions, source, tree, settings)
}

/// [`walk`] over the named nodes the pre-pass recorded (`steps`, see
/// [`SemanticModel::new_recording`]) instead of a second cursor walk: the same nodes, in the same
/// order, with the same `enter` / `leave` calls and the same `dispatchable` flags; `visit` also
/// gets the node's `kind_id()`, recorded with it.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
fn replay<'t>(
    tree: &'t Tree,
    steps: &[WalkStep<'t>],
    semantic: &mut SemanticModel<'t>,
    visit: impl FnMut(&SemanticModel<'t>, Node<'t>, u16, bool),
) {
    let root = tree.root_node();
    let root = WalkStep {
        node: root,
        depth: 0,
        kind: root.kind_id(),
    };
    replay_steps(std::slice::from_ref(&root), steps, 0, semantic, visit);
}

/// [`walk_node`] over a top-level statement whose named nodes the pre-pass recorded (`steps`:
/// the statement first, at depth 1; see [`StatementWalks`]), below `error_depth` `ERROR` nodes
/// (the root's): the same visits, with the node's `kind_id()`, without a second cursor walk.
pub(crate) fn replay_statement<'t>(
    steps: &[WalkStep<'t>],
    error_depth: usize,
    semantic: &mut SemanticModel<'t>,
    visit: impl FnMut(&SemanticModel<'t>, Node<'t>, u16, bool),
) {
    replay_steps(&[], steps, error_depth, semantic, visit);
}

/// Enters `open` (the nodes above `steps`, outermost first, at depths 0, 1, ...), then each step
/// after leaving the open nodes at its depth or deeper, then leaves every node still open.
/// `errors`: the `ERROR` nodes around `open[0]`.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
fn replay_steps<'t>(
    open: &[WalkStep<'t>],
    steps: &[WalkStep<'t>],
    mut errors: usize,
    semantic: &mut SemanticModel<'t>,
    mut visit: impl FnMut(&SemanticModel<'t>, Node<'t>, u16, bool),
) {
    // `Node::is_error` is `kind_id() == ts_builtin_sym_error`.
    const ERROR: u16 = u16::MAX;
    let mut enter = |step: WalkStep<'t>, semantic: &mut SemanticModel<'t>, errors: &mut usize| {
        let WalkStep { node, kind, .. } = step;
        if kind == ERROR {
            *errors += 1;
        }
        let name = syntax::kind_name_with_id(node, kind);
        semantic.enter(node);
        let dispatchable = *errors == 0 && (!node.has_error() || name == "module");
        visit(semantic, node, kind, dispatchable);
    };
    let leave = |step: WalkStep<'t>, semantic: &mut SemanticModel<'t>, errors: &mut usize| {
        semantic.leave_kind(step.node, syntax::kind_name_with_id(step.node, step.kind));
        if step.kind == ERROR {
            *errors = errors.saturating_sub(1);
        }
    };
    // The entered nodes not yet left, outermost first; a step at depth `d` follows the leaving
    // of every open node at depth `d` or deeper (the open nodes' depths are 0, 1, ...).
    let mut entered: Vec<WalkStep<'t>> = Vec::with_capacity(64);
    for &step in open {
        enter(step, semantic, &mut errors);
        entered.push(step);
    }
    // Depths are counted from the first open node (the root at 0); without one, the steps
    // start below a root entered by the caller.
    let base = usize::from(open.is_empty());
    for &step in steps {
        while entered.len() + base > step.depth as usize {
            if let Some(done) = entered.pop() {
                leave(done, semantic, &mut errors);
            } else {
                break;
            }
        }
        enter(step, semantic, &mut errors);
        entered.push(step);
    }
    while let Some(done) = entered.pop() {
        leave(done, semantic, &mut errors);
    }
}

/// Which rules run on a file: enabled, and (with the prefilter) with their words in the file;
/// and whether a call rule sees only the calls it declares ([`RuleMeta::calls`]).
pub(crate) struct RunningRules(Vec<bool>, bool);

impl RunningRules {
    pub(crate) fn of(source: &str, settings: &Settings, prefilter: Prefilter) -> RunningRules {
        let present = (prefilter != Prefilter::Off).then(|| PresentTokens::of(source));
        Self::with_tokens(present.as_ref(), settings, prefilter)
    }

    /// [`Self::of`] with the file's words found already (`None`: the prefilter is off).
    pub(crate) fn with_tokens(
        present: Option<&PresentTokens>,
        settings: &Settings,
        prefilter: Prefilter,
    ) -> RunningRules {
        RunningRules(
            (0..rules().len())
                .map(|index| {
                    let id = RuleId(index as u16);
                    settings.rules.is_enabled(id) && present.is_none_or(|p| p.may_report(id))
                })
                .collect(),
            prefilter == Prefilter::On,
        )
    }

    pub(crate) fn any(&self) -> bool {
        self.0.iter().any(|runs| *runs)
    }

    fn runs(&self, id: RuleId) -> bool {
        self.0.get(id.0 as usize).copied().unwrap_or(false)
    }

    /// Equal for equal sets of running rules (incremental checking compares them).
    pub(crate) fn flags(&self) -> &[bool] {
        &self.0
    }
}

/// The file's roles from its settings (test file, data pipeline, converter).
fn configure_model(semantic: &mut SemanticModel<'_>, settings: &Settings) {
    semantic.set_test_file(settings.test_path);
    semantic.set_data_pipeline_file(settings.data_pipeline_path);
    semantic.set_converter_file(settings.converter_path);
}

/// The semantic index of `tree` as the checker starts it, reusing the pre-pass of unchanged
/// statements from earlier checks' caches.
pub(crate) fn new_model_reusing<'t>(
    source: &'t str,
    tree: &'t Tree,
    settings: &Settings,
    caches: &[&SummaryCache],
    statements: &[Node<'t>],
) -> (SemanticModel<'t>, SummaryCache, StatementWalks<'t>) {
    let (mut semantic, cache, walks) =
        SemanticModel::new_reusing(source, tree, settings.backend, caches, statements);
    configure_model(&mut semantic, settings);
    (semantic, cache, walks)
}

/// Runs the running rules registered for a node's kind, and the policy every rule shares.
pub(crate) struct Dispatcher<'t, 's> {
    source: &'t str,
    root: Node<'t>,
    settings: &'s Settings,
    dispatch: Vec<Vec<RuleId>>,
    call_kind: u16,
    call_parts: CallParts<'t>,
    /// The running `call` rules that declare no callee (every running `call` rule when the
    /// callee filter is off): what a call with no declared name runs.
    call_any: Vec<RuleId>,
    /// For each declared callee name with a running rule: those rules and [`Self::call_any`].
    call_named: Vec<(&'static str, Vec<RuleId>)>,
    /// Positions in [`Self::call_named`] by name.
    call_names: CallNames,
    /// The rules of a call with two names (written and imported), merged.
    call_both: Vec<RuleId>,
}

impl<'t, 's> Dispatcher<'t, 's> {
    pub(crate) fn new(
        source: &'t str,
        tree: &'t Tree,
        settings: &'s Settings,
        running: &RunningRules,
    ) -> Self {
        let dispatch: Vec<Vec<RuleId>> = DISPATCH
            .iter()
            .map(|ids| ids.iter().copied().filter(|id| running.runs(*id)).collect())
            .collect();
        let call_kind = PYTHON.id_for_node_kind("call", true);
        let call_rules = dispatch
            .get(call_kind as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let filter_callees = running.1;
        let call_any: Vec<RuleId> = call_rules
            .iter()
            .copied()
            .filter(|id| !filter_callees || id.meta().calls.is_empty())
            .collect();
        let mut call_named = Vec::new();
        let mut call_names = CallNames::default();
        if filter_callees {
            let mut declared = Vec::new();
            for (name, ids) in CALL_DISPATCH.iter() {
                declared.clear();
                declared.extend(ids.iter().copied().filter(|id| running.runs(*id)));
                if !declared.is_empty() {
                    let mut merged = Vec::new();
                    merge_ids(&call_any, &declared, &mut merged);
                    call_names.add(name, call_named.len());
                    call_named.push((*name, merged));
                }
            }
        }
        Dispatcher {
            source,
            root: tree.root_node(),
            settings,
            dispatch,
            call_kind,
            call_parts: CallParts::default(),
            call_any,
            call_named,
            call_names,
            call_both: Vec::new(),
        }
    }

    /// Runs the rules of `node` (a dispatchable node, see [`walk`]), appending what they keep.
    pub(crate) fn run(
        &mut self,
        semantic: &SemanticModel<'t>,
        node: Node<'t>,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        self.run_kind(semantic, node, node.kind_id(), diagnostics);
    }

    /// [`Self::run`] with `kind` = `node.kind_id()`, known already.
    pub(crate) fn run_kind(
        &mut self,
        semantic: &SemanticModel<'t>,
        node: Node<'t>,
        kind: u16,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let source = self.source;
        let is_call = kind == self.call_kind;
        let rules_for_kind: &[RuleId] = if is_call {
            if self.call_any.is_empty() && self.call_named.is_empty() {
                return;
            }
            self.call_parts.fill(node, source);
            // The call's names (see `RuleMeta::calls`): the written final segment, and for a
            // bare name an import bound, the final segment of what it imports.
            let written = self.call_parts.name;
            let imported = match self.call_parts.parts {
                Some((function, _)) if function.is(kind::IDENTIFIER) => written
                    .and_then(|name| semantic.import_of(name))
                    .map(final_segment)
                    .filter(|segment| Some(*segment) != written),
                _ => None,
            };
            let named = |name: &str| {
                let position = self.call_names.find(&self.call_named, name)?;
                Some(&self.call_named[position].1)
            };
            let by_written = written.and_then(named);
            let by_import = imported.and_then(named);
            match (by_written, by_import) {
                (Some(a), Some(b)) => {
                    merge_ids(a, b, &mut self.call_both);
                    &self.call_both
                }
                (Some(ids), None) | (None, Some(ids)) => ids,
                (None, None) => &self.call_any,
            }
        } else {
            self.dispatch
                .get(kind as usize)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        if rules_for_kind.is_empty() {
            return;
        }
        let current_call = is_call.then_some(&self.call_parts);
        let before = diagnostics.len();
        // A library module's function that no hot path of the file reaches: a cost finding its
        // rule demoted to information for that reason says nothing the user can weigh (how often
        // the code runs is up to callers elsewhere), so it is left out unless
        // `library-code = "all"`. Dtype and API choices (TPU5xx, TPU6xx) persist beyond the line
        // and are kept, as in once-per-run and load-time code.
        let drop_demoted = self.settings.library_code == LibraryCodePolicy::HotPaths
            && semantic.in_unreached_library_code();
        for id in rules_for_kind {
            let rule = id.meta();
            let first = diagnostics.len();
            let mut context = Context {
                source,
                root: self.root,
                semantic,
                rule,
                settings: self.settings,
                diagnostics,
                current_call,
            };
            (rule.check)(&mut context, node);
            if drop_demoted
                && rule.severity != Severity::Info
                && crate::semantic::concerns_execution_cost(rule.code)
            {
                let mut index = first;
                while index < diagnostics.len() {
                    if diagnostics[index].severity == Severity::Info {
                        diagnostics.remove(index);
                    } else {
                        index += 1;
                    }
                }
            }
        }
        // Code that never runs on a TPU (a CUDA-only branch, a test skipped without CUDA,
        // `if TYPE_CHECKING:`, `cuda_test and …` within a statement) has no TPU problems;
        // test code reports only errors by default. Decided once here, not rule by rule.
        if diagnostics.len() > before {
            let unreachable = semantic.hardware_scope().is_unreachable_on_tpu();
            let test_code = semantic.in_test_code();
            let mut found = diagnostics.split_off(before);
            found.retain(|diagnostic| {
                if unreachable
                    || semantic.range_never_on_tpu(node, diagnostic.range.clone())
                    || !semantic.role_reports(diagnostic.code, diagnostic.severity)
                {
                    return false;
                }
                !test_code
                    || match self.settings.test_code {
                        TestCodePolicy::All => true,
                        TestCodePolicy::Off => false,
                        TestCodePolicy::ErrorsOnly => diagnostic.severity == Severity::Error,
                    }
            });
            diagnostics.append(&mut found);
        }
    }
}

/// What follows the traversal: suppressions, unfixable fixes, then [`finish_syntax`].
pub(crate) fn finish(
    diagnostics: Vec<Diagnostic>,
    suppressions: Suppressions,
    source: &str,
    tree: &Tree,
    settings: &Settings,
) -> Vec<Diagnostic> {
    let mut diagnostics = suppressions.apply(diagnostics, source, &settings.rules);
    settings.remove_unfixable_fixes(&mut diagnostics);
    finish_syntax(diagnostics, source, tree)
}

/// Adds the syntax errors (after suppressions: no selection or `# noqa` hides one), sorts by
/// position, then code, and drops duplicates.
pub(crate) fn finish_syntax(
    mut diagnostics: Vec<Diagnostic>,
    source: &str,
    tree: &Tree,
) -> Vec<Diagnostic> {
    diagnostics.extend(crate::syntax_errors::syntax_errors(source, tree));
    crate::sort::sort_stably_by_key(&mut diagnostics, |d| {
        (d.range.start, d.range.end, 0, d.code)
    });
    diagnostics.dedup_by(|a, b| a.range == b.range && a.code == b.code);
    diagnostics
}

/// What the semantic index believes at one point of a file (for tests and editor hovers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Kind of the smallest named node covering the offset.
    pub node_kind: String,
    pub fact: Fact,
    pub qualified_name: Option<String>,
    pub hot_path: Option<HotPath>,
    pub backend: Backend,
    /// What the enclosing guards say about the hardware the node runs on.
    pub hardware_scope: HardwareScope,
    /// Whether the node is test code.
    pub test_code: bool,
    /// The node's other code roles (error branch, load time, host data pipeline).
    pub roles: crate::semantic::CodeRoles,
}

/// Inspects the smallest named node that covers `range`, with the index as the traversal
/// sees it at that node.
pub fn inspect(
    source: &str,
    tree: &Tree,
    settings: &Settings,
    range: TextRange,
) -> Option<Inspection> {
    let target = tree
        .root_node()
        .named_descendant_for_byte_range(range.start, range.end)?;
    let mut semantic = SemanticModel::new(source, tree, settings.backend);
    semantic.set_test_file(settings.test_path);
    semantic.set_data_pipeline_file(settings.data_pipeline_path);
    semantic.set_converter_file(settings.converter_path);
    let mut found = None;
    walk(tree, &mut semantic, |semantic, node, _| {
        if node.id() == target.id() {
            found = Some(Inspection {
                node_kind: node.kind_name().to_string(),
                fact: semantic.fact(node),
                qualified_name: semantic.qualified_name(node),
                hot_path: semantic.hot_path(),
                backend: semantic.backend(),
                hardware_scope: semantic.hardware_scope(),
                test_code: semantic.in_test_code(),
                roles: semantic.code_roles(),
            });
            return false;
        }
        true
    });
    found
}

/// Parses and checks `source`.
pub fn check_source(source: &str, settings: &Settings) -> Vec<Diagnostic> {
    match syntax::parse(source, None) {
        Some(tree) => check_tree(source, &tree, settings),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::BackendSetting;

    /// Every visit of a traversal: the node, whether it is dispatchable, and its parent as the
    /// index sees it then (which `leave` keeps right only if it ran at the right times).
    fn visits(source: &str, tree: &Tree, replayed: bool) -> Vec<(usize, bool, Option<usize>)> {
        let mut seen = Vec::new();
        let mut record = |semantic: &SemanticModel<'_>, node: Node<'_>, dispatchable: bool| {
            seen.push((
                node.id(),
                dispatchable,
                semantic.parent(node).map(|p| p.id()),
            ));
        };
        if replayed {
            let (mut semantic, steps) =
                SemanticModel::new_recording(source, tree, BackendSetting::Auto);
            replay(
                tree,
                &steps,
                &mut semantic,
                |semantic, node, kind, dispatchable| {
                    assert_eq!(kind, node.kind_id());
                    record(semantic, node, dispatchable);
                },
            );
        } else {
            let mut semantic = SemanticModel::new(source, tree, BackendSetting::Auto);
            walk(tree, &mut semantic, |semantic, node, dispatchable| {
                record(semantic, node, dispatchable);
                true
            });
        }
        seen
    }

    /// [`visits`] of an incremental check's traversal, statement by statement below the root:
    /// each statement walked, or replayed from the reusing pre-pass's recorded walk.
    fn statement_visits(
        source: &str,
        tree: &Tree,
        replayed: bool,
    ) -> Vec<(usize, bool, Option<usize>)> {
        let settings = Settings::default();
        let root = tree.root_node();
        let statements: Vec<Node<'_>> = root.named_nodes().collect();
        let (mut semantic, _, walks) = new_model_reusing(source, tree, &settings, &[], &statements);
        let root_errors = usize::from(root.is_error());
        let mut seen = Vec::new();
        semantic.enter(root);
        for (index, &statement) in statements.iter().enumerate() {
            let mut record = |semantic: &SemanticModel<'_>, node: Node<'_>, dispatchable| {
                seen.push((
                    node.id(),
                    dispatchable,
                    semantic.parent(node).map(|p| p.id()),
                ));
            };
            if replayed {
                // No cache: the pre-pass walked (and recorded) every statement.
                let steps = walks.of(index).expect("every statement was walked");
                replay_statement(
                    steps,
                    root_errors,
                    &mut semantic,
                    |semantic, node, kind, d| {
                        assert_eq!(kind, node.kind_id());
                        record(semantic, node, d);
                    },
                );
            } else {
                walk_node(
                    statement,
                    root_errors,
                    &mut semantic,
                    &mut |semantic, node, d| {
                        record(semantic, node, d);
                        true
                    },
                );
            }
        }
        semantic.leave(root);
        seen
    }

    /// Edge cases for the walk and replay tests (empty, comments only, `;`-separated statements,
    /// decorators, nested definitions, syntax errors, compound statements, `match`, odd bytes),
    /// besides the fixtures and examples `test_sources` adds.
    const WALK_EDGE_CASES: &[&str] = &[
        "",
        "\n\n# only a comment\n",
        "a = 1; b = 2;\nc = 3 ; # trailing\n",
        "@torch.compile\n@other(1)\ndef f(x):\n    # inside\n    return [y for y in x if y]\n",
        "class A(B):\n    def f(self, a: int = 1) -> None:\n        g = lambda z: z % 2\n        return f\"{a!r}\"\n",
        "def g(:\n    exec x\nfor i in range(3):\n    if i: continue\n    else:\n        break\n",
        "x = (\n  1 +\n  )\n)) ]] def\n\tclass ::\n",
        "if a:\n    pass\nelif b:\n  pass\n else:\n    pass\nwhile True:\n    with open(p) as f, g() as h:\n        try:\n            yield\n        except E as e:\n            raise\n",
        "match x:\n    case [a, *b] if a > 0:\n        pass\n    case {'k': v}:\n        pass\n",
        "\u{0}\u{1}\u{feff}é = '\\\n'\nb'\\xff'\n",
    ];

    #[test]
    fn a_replayed_statement_is_its_walk() {
        let sources = crate::test_sources(WALK_EDGE_CASES);
        for source in &sources {
            let tree = syntax::parse(source, None).expect("parses");
            let walked = statement_visits(source, &tree, false);
            assert_eq!(
                walked,
                statement_visits(source, &tree, true),
                "on {source:?}"
            );
            // The same visits as the whole-tree walk, the root's own aside.
            let whole = visits(source, &tree, false);
            assert_eq!(whole.get(1..).unwrap_or_default(), walked, "on {source:?}");
        }
    }

    #[test]
    fn declared_callee_names_have_distinct_hashes() {
        let mut hashes: Vec<u64> = CALL_DISPATCH
            .iter()
            .map(|(name, _)| crate::semantic::name_hash(name))
            .collect();
        assert!(!hashes.is_empty());
        let count = hashes.len();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), count);
    }

    #[test]
    fn the_replayed_traversal_is_the_walk() {
        let sources = crate::test_sources(WALK_EDGE_CASES);
        for source in &sources {
            let tree = syntax::parse(source, None).expect("parses");
            let walked = visits(source, &tree, false);
            assert!(!walked.is_empty());
            assert_eq!(walked, visits(source, &tree, true), "on {source:?}");
        }
    }
}

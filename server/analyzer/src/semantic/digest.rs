//! What incremental checking (`crate::incremental`) reads of the semantic index: a digest of the
//! whole-file pre-pass (imports, summaries, roles, backend) free of absolute offsets (the few
//! it holds are located by statement), so that it compares across edits; the module-level hardware scope; the names bound in module scope.
//!
//! Across top-level statements the index carries only these: the pre-pass, module-scope
//! bindings (by name; classes and function returns are reached through them) and the module's
//! guard frame. Every field of [`SemanticModel`] is destructured in [`SemanticModel::prepass_digest`]:
//! a field added to the index fails to compile there until its author decides whether it is a
//! new channel between statements (then `incremental` must learn it).

use std::hash::{Hash, Hasher};

use crate::hash::DigestHasher;

use super::guards::GuardFrame;
use super::summaries::ReturnFacts;
use super::{Binding, ClassInfo, Fact, FunctionReturns, SemanticModel};

/// Maps a byte offset to a location that survives edits elsewhere: the text hash of the
/// top-level statement holding it and the offset inside that statement.
pub(crate) type Locate<'a> = &'a dyn Fn(usize) -> (u64, usize);

/// The hash by which incremental checking compares names (bound names, identifiers in text).
pub(crate) fn name_hash(name: &str) -> u64 {
    hash_one(name)
}

fn hash_one(value: impl Hash) -> u64 {
    crate::hash::digest(value)
}

/// An order-independent digest of `items` (the sum of their hashes), for hash maps and sets.
fn unordered<T>(items: impl Iterator<Item = T>, hash: impl Fn(T) -> u64) -> u64 {
    items.fold(0u64, |sum, item| sum.wrapping_add(hash(item)))
}

fn strings(set: &crate::hash::StringSet) -> u64 {
    unordered(set.iter(), hash_one)
}

/// The pre-pass as incremental checking compares it, split by who reads each part: equal
/// digests mean every rule sees the same imports, summaries, file facts, roles and backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PrepassDigest {
    /// The parts any statement may read (imports, file facts, roles, backend, the sets the
    /// pre-pass derives over the whole file), by name: a difference falls back to a full check.
    pub(crate) file_wide: Vec<(&'static str, u64)>,
    /// Per function and loop summary, and per node the pre-pass marks (throttles, CUDA-only
    /// blocks, cross-backend comparisons, compared device counts): a digest of where it is (its
    /// top-level statement's text hash and its offset there) with what it says, and its start in
    /// the text. Only the statement that holds the node reads these (`function_summary` of a
    /// definition, `loop_summary` of a loop, the definition's parameters' passed facts, the
    /// guard frames of the marked blocks and conditions).
    pub(crate) local: Vec<(u64, usize)>,
    /// Per function: a digest of what statements that call it by name read of its summary
    /// ([`super::FunctionSummary::read_by_name`]) with how many functions before it say the same, and
    /// its name's [`name_hash`].
    pub(crate) by_name: Vec<(u64, u64)>,
}

/// What one check's pre-pass differs from an earlier one's in, when only per-function and
/// per-loop parts differ: the statements that hold a changed part, and the names of the
/// functions whose by-name part changed.
#[derive(Debug, Default)]
pub(crate) struct PrepassChanges {
    /// Starts (in the new text) of the definitions, loops and marked nodes whose summaries
    /// changed or that are new.
    pub(crate) local_starts: Vec<usize>,
    /// Starts (in the old text) of the ones that are gone or changed.
    pub(crate) old_local_starts: Vec<usize>,
    /// [`name_hash`]es of the functions whose by-name part was added, removed or changed.
    pub(crate) names: crate::hash::KeySet,
}

impl PrepassDigest {
    /// How `self` (the new pre-pass) differs from `old`: `Err` with the name of a file-wide part
    /// that differs, else the per-statement differences.
    pub(crate) fn changes_since(
        &self,
        old: &PrepassDigest,
    ) -> Result<PrepassChanges, &'static str> {
        if self.file_wide.len() != old.file_wide.len() {
            return Err("module summary changed");
        }
        for (new, old) in self.file_wide.iter().zip(&old.file_wide) {
            if new != old {
                return Err(new.0);
            }
        }
        let mut changes = PrepassChanges::default();
        differing_parts(&self.local, &old.local, |start, in_new| {
            if in_new {
                changes.local_starts.push(start);
            } else {
                changes.old_local_starts.push(start);
            }
        });
        differing_parts(&self.by_name, &old.by_name, |name, _| {
            changes.names.insert(name);
        });
        Ok(changes)
    }
}

impl SemanticModel<'_> {
    /// The whole-file part of the index, computed before the traversal, split by who reads it
    /// ([`PrepassDigest`]).
    pub(crate) fn prepass_digest(&self, locate: Locate<'_>) -> PrepassDigest {
        let SemanticModel {
            source: _,
            ancestors: _,
            backend,
            // Derived from the import records and the backend, both hashed below.
            function_backends: _,
            imported_modules: _,
            scopes: _,
            frames: _,
            classes: _,
            compiled_names: _,
            imports,
            guard_frames: _,
            test_framework,
            library_module,
            fragment,
            excerpt,
            summaries,
            functions: _,
            file_memo: _,
            assignment_records: _,
            qualified_name_memo: _,
            // Read by incremental checking, per statement (`module_binds`, `module_journal`).
            module_binds: _,
            // From the settings, whose digest incremental checking compares first.
            converter: _,
            module_journal: _,
        } = self;
        let mut file_wide = Vec::new();
        file_wide.push((
            "module summary changed: backend or roles",
            hash_one((backend, test_framework, library_module, fragment, excerpt)),
        ));
        // Import statements' offsets are left out: rules and the importer compare them with
        // other positions (order, containment), which edits elsewhere preserve, and a fix or
        // related range that points into edited text is never reused (`incremental`).
        let mut state = DigestHasher::default();
        for record in imports.records() {
            let mut copy = record.clone();
            copy.statement = 0..0;
            copy.guard = copy.guard.map(|_| 0..0);
            copy.hash(&mut state);
        }
        file_wide.push(("module summary changed: imports", state.finish()));
        let super::Summaries {
            functions,
            by_node,
            loops,
            file,
            compiled_names,
            step_closures,
            cuda_library_scopes,
            cuda_mode_flags,
            cuda_attributes,
            compared_counts,
            cuda_only_callees,
            throttles,
            throttle_exits,
            comparison_scopes,
            host_transform_components,
            parameter_facts,
            stale_parameter_moves,
            // Intermediate results of the pre-pass, summarised by the fields above.
            ..
        } = summaries;
        // Every field of the summaries is hashed (none holds an offset but those located
        // here). Function indices are positional: which index a definition has follows from
        // the texts, and a function's summary is compared where its definition is.
        // `calls` only feeds the call graph, which matches callees by name against the file's
        // functions: calls of other names (`loss.item()`, `torch.zeros`) change nothing.
        let mut defined = crate::semantic::summaries::NameSet::default();
        for function in functions {
            defined.insert(&function.name);
        }
        let mut definition_starts = vec![None; functions.len()];
        for (&key, &index) in by_node.iter() {
            if let Some(start) = definition_starts.get_mut(index) {
                *start = Some((key >> 16) as usize);
            }
        }
        let parameter_starts = super::passed::parameter_starts(functions);
        let mut local = Vec::with_capacity(functions.len() + loops.values().count());
        let mut by_name = Vec::with_capacity(functions.len());
        // How many functions so far read the same by name (two equal helpers are two entries).
        let mut seen: crate::hash::HashMap<u64, usize> = crate::hash::HashMap::default();
        for (index, function) in functions.iter().enumerate() {
            let mut state = DigestHasher::default();
            let mut copy = function.clone();
            copy.calls
                .retain(|callee| defined.contains(callee.as_str()));
            copy.first_save.take().map(locate).hash(&mut state);
            for (name, range) in std::mem::take(&mut copy.host_until_moved) {
                (name, locate(range.start), locate(range.end)).hash(&mut state);
            }
            copy.hash(&mut state);
            // What every call in the file passes its parameters (`passed_fact`): decided by
            // calls in other statements, read only in its own body.
            let first = parameter_starts.get(index).copied().unwrap_or(0);
            for position in 0..function.parameters.len() {
                parameter_facts.get(first + position).hash(&mut state);
            }
            // A definition the pre-pass did not key (none today) is compared file-wide.
            match definition_starts[index] {
                Some(start) => {
                    locate(start).hash(&mut state);
                    local.push((state.finish(), start));
                }
                None => file_wide.push(("module summary changed: functions", state.finish())),
            }
            let read = hash_one(function.read_by_name());
            let count = seen.entry(read).or_insert(0);
            by_name.push((hash_one((read, *count)), name_hash(&function.name)));
            *count += 1;
        }
        for (key, summary) in loops.entries() {
            let mut copy = summary.clone();
            copy.calls
                .retain(|callee| defined.contains(callee.as_str()));
            let start = (key >> 16) as usize;
            local.push((hash_one((copy, locate(start))), start));
        }
        // Each follows from its own statement (a condition and names bound in its function, a
        // block's own calls and the imports, a function's own calls) and the file-wide sets
        // compared below, and is read where it is: compared where it is.
        for (set, keys) in [
            "throttle",
            "throttle exit",
            "comparison scope",
            "CUDA library scope",
            "compared count",
        ]
        .into_iter()
        .zip([
            throttles,
            throttle_exits,
            comparison_scopes,
            cuda_library_scopes,
            compared_counts,
        ]) {
            for key in keys.iter() {
                let start = (key >> 16) as usize;
                local.push((hash_one((set, locate(start), key & 0xFFFF)), start));
            }
        }
        // A stale move follows from calls elsewhere in its function (the holders of its
        // parameters) and is read where the move is: compared there, with its holder's place.
        for (call, capture) in stale_parameter_moves {
            let start = (call >> 16) as usize;
            local.push((
                hash_one((
                    "stale parameter move",
                    locate(start),
                    call & 0xFFFF,
                    locate(capture.start),
                    locate(capture.end),
                )),
                start,
            ));
        }
        let mut file = file.clone();
        let first_module_save = file.first_module_save.take().map(locate);
        let module_step_markers: Vec<_> = std::mem::take(&mut file.module_step_markers)
            .into_iter()
            .map(locate)
            .collect();
        let module_loops: Vec<_> = std::mem::take(&mut file.module_loops)
            .into_iter()
            .map(locate)
            .collect();
        file_wide.push((
            "module summary changed: file facts",
            hash_one((file, first_module_save, module_step_markers, module_loops)),
        ));
        file_wide.push((
            "module summary changed: compiled names or step closures",
            hash_one((strings(compiled_names), strings(step_closures))),
        ));
        // Decided by assignments in any statement (`self.stream = torch.cuda.Stream()`) and by
        // calls in other statements (the callers' guards).
        file_wide.push((
            "module summary changed: CUDA-only names",
            hash_one((
                strings(cuda_mode_flags),
                strings(cuda_attributes),
                strings(cuda_only_callees),
            )),
        ));
        // Decided by calls in other statements (the transform's methods).
        file_wide.push((
            "module summary changed: host transform components",
            strings(host_transform_components),
        ));
        PrepassDigest {
            file_wide,
            local,
            by_name,
        }
    }

    /// The module-level hardware scope at this point (an early exit at module level, such as
    /// `if not torch.cuda.is_available(): sys.exit()`, changes it for every later statement).
    pub(crate) fn root_guard_digest(&self) -> u64 {
        self.guard_frames.first().map_or(0, |frame| {
            hash_one((frame.scope, frame.test_code, frame.cold))
        })
    }

    /// Hashes ([`name_hash`]) of the names bound in module scope so far, in order.
    pub(crate) fn module_binds(&self) -> &[u64] {
        &self.module_binds
    }

    /// The whole-file questions rules asked so far ([`Self::file_memo`]) with their answers.
    pub(crate) fn file_memo_entries(&self) -> Vec<((&'static str, &'static str), bool)> {
        self.file_memo.borrow().clone()
    }
}

/// One change to the module scope (see `SemanticModel::module_journal`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ModuleChange {
    Bind(String, Binding),
    /// A name assigned a value that does (or does not) need CUDA (`Scope::cuda_values`).
    CudaValue(String, bool),
}

/// Where the index stood at the start of a top-level statement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    classes: usize,
    functions: usize,
    journal: usize,
}

/// What a top-level statement did to the index, as seen by the statements after it: the classes
/// and functions it defined (with what their bodies taught the index), its changes to the module
/// scope, and the module's guard frame after it. Between top-level statements the traversal
/// holds nothing else (no frame, scope or ancestor but the module's; the pre-pass is fixed), so
/// replaying these equals walking the statement again when it would be walked the same way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModuleEffects {
    first_class: usize,
    classes: Vec<ClassInfo>,
    first_function: usize,
    functions: Vec<FunctionReturns>,
    changes: Vec<ModuleChange>,
    root: GuardFrame,
}

/// Maps an offset range of the text the effects were recorded on to the current text, or
/// `None` when the range was edited.
pub(crate) type MapRange<'a> = &'a dyn Fn((usize, usize)) -> Option<(usize, usize)>;

fn map_fact(fact: &Fact, map: MapRange<'_>) -> Option<Fact> {
    Some(Fact {
        origin: match fact.origin {
            Some(origin) => Some(map(origin)?),
            None => None,
        },
        ..*fact
    })
}

impl ReturnFacts {
    fn map_origins(&self, map: MapRange<'_>) -> Option<ReturnFacts> {
        let mut moved = self.clone();
        let (single, tuple) = moved.facts_mut();
        if let Some(fact) = single {
            *fact = map_fact(fact, map)?;
        }
        for fact in tuple.into_iter().flatten() {
            *fact = map_fact(fact, map)?;
        }
        Some(moved)
    }
}

impl<'t> SemanticModel<'t> {
    /// The index's position at the start of a top-level statement (see [`ModuleEffects`]).
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            classes: self.classes.len(),
            functions: self.functions.len(),
            journal: self.module_journal.len(),
        }
    }

    /// Whether the traversal is between top-level statements (nothing open but the module).
    pub(crate) fn at_module_level(&self) -> bool {
        self.frames.is_empty()
            && self.scopes.len() == 1
            && self.guard_frames.len() == 1
            && self.ancestors.len() == 1
    }

    /// What the statement since `mark` did (call at its end, back at module level).
    pub(crate) fn effects_since(&self, mark: Mark) -> Option<ModuleEffects> {
        if !self.at_module_level() {
            return None;
        }
        Some(ModuleEffects {
            first_class: mark.classes,
            classes: self.classes[mark.classes..].to_vec(),
            first_function: mark.functions,
            functions: self.functions[mark.functions..].to_vec(),
            changes: self.module_journal[mark.journal..].to_vec(),
            // The root's node id differs between parses; `replay` keeps the current one.
            root: GuardFrame {
                node_id: 0,
                ..self.guard_frames[0]
            },
        })
    }

    /// Applies a statement's recorded effects instead of walking it, with every recorded offset
    /// mapped by `map`; `false` (and nothing changed) when an offset does not map or the index
    /// is not between top-level statements.
    pub(crate) fn replay(&mut self, effects: &ModuleEffects, map: MapRange<'_>) -> bool {
        if !self.at_module_level() {
            return false;
        }
        let Some(moved) = effects.mapped(map) else {
            return false;
        };
        let ModuleEffects {
            first_class,
            classes,
            first_function,
            functions,
            changes,
            root,
        } = moved;
        let class_base = self.classes.len();
        let function_base = self.functions.len();
        let rebase_class = |index: usize| match index.checked_sub(first_class) {
            Some(local) => local + class_base,
            None => index,
        };
        let functions: Vec<FunctionReturns> = functions
            .into_iter()
            .map(|function| FunctionReturns {
                class: function.class.map(rebase_class),
                ..function
            })
            .collect();
        let changes: Vec<ModuleChange> = changes
            .into_iter()
            .map(|change| match change {
                ModuleChange::Bind(name, Binding::Class(index)) => {
                    ModuleChange::Bind(name, Binding::Class(rebase_class(index)))
                }
                ModuleChange::Bind(name, Binding::Function(index)) if index >= first_function => {
                    ModuleChange::Bind(
                        name,
                        Binding::Function(index - first_function + function_base),
                    )
                }
                other => other,
            })
            .collect();
        self.classes.extend(classes);
        self.functions.extend(functions);
        *self.qualified_name_memo.get_mut() = None;
        for change in changes {
            match change {
                ModuleChange::Bind(name, binding) => self.bind(name, binding),
                ModuleChange::CudaValue(name, cuda) => {
                    self.module_journal
                        .push(ModuleChange::CudaValue(name.clone(), cuda));
                    self.scopes[0].cuda_values.record(name, cuda);
                }
            }
        }
        let node_id = self.guard_frames[0].node_id;
        self.guard_frames[0] = GuardFrame { node_id, ..root };
        true
    }
}

impl ModuleEffects {
    /// The functions (methods included) whose returns differ between `self` and `other`, by
    /// name, when the two statements did otherwise the same to the index but for the classes'
    /// own facts: the same functions in the same order, the same module-scope changes and the
    /// same guard frame after them. `None` when they differ in anything else. The caller taints
    /// the statement's own names either way; this says which of its functions' names a later
    /// `obj.name(...)` reads differently.
    pub(crate) fn functions_with_other_returns(&self, other: &ModuleEffects) -> Option<Vec<&str>> {
        if self.first_class != other.first_class
            || self.classes.len() != other.classes.len()
            || self.first_function != other.first_function
            || self.functions.len() != other.functions.len()
            || self.changes != other.changes
            || self.root != other.root
        {
            return None;
        }
        let mut names = Vec::new();
        for (mine, theirs) in self.functions.iter().zip(&other.functions) {
            if mine.class != theirs.class || mine.name != theirs.name {
                return None;
            }
            if mine.returns != theirs.returns || mine.complete != theirs.complete {
                names.push(mine.name.as_str());
            }
        }
        Some(names)
    }

    /// The same effects with every recorded offset mapped by `map` (`None` if one does not map).
    pub(crate) fn mapped(&self, map: MapRange<'_>) -> Option<ModuleEffects> {
        let mut classes = Vec::with_capacity(self.classes.len());
        for class in &self.classes {
            let mut attributes = super::ByName::default();
            for (name, fact) in class.attributes.iter() {
                attributes.insert(name.clone(), map_fact(fact, map)?);
            }
            classes.push(ClassInfo {
                attributes,
                ..*class
            });
        }
        let mut functions = Vec::with_capacity(self.functions.len());
        for function in &self.functions {
            functions.push(FunctionReturns {
                class: function.class,
                name: function.name.clone(),
                returns: function.returns.map_origins(map)?,
                complete: function.complete,
            });
        }
        let mut changes = Vec::with_capacity(self.changes.len());
        for change in &self.changes {
            changes.push(match change {
                ModuleChange::Bind(name, Binding::Value(fact)) => {
                    ModuleChange::Bind(name.clone(), Binding::Value(map_fact(fact, map)?))
                }
                other => other.clone(),
            });
        }
        Some(ModuleEffects {
            first_class: self.first_class,
            classes,
            first_function: self.first_function,
            functions,
            changes,
            root: self.root,
        })
    }
}

/// The parts whose digests differ between two lists of (digest, what the part is): `each` gets
/// every part of `new` whose digest `old` lacks (with `true`), then every part of `old` whose
/// digest `new` lacks (with `false`).
fn differing_parts<T: Copy>(new: &[(u64, T)], old: &[(u64, T)], mut each: impl FnMut(T, bool)) {
    let (mut old_digests, mut new_digests) = (
        crate::hash::KeySet::default(),
        crate::hash::KeySet::default(),
    );
    old_digests.extend(old.iter().map(|(digest, _)| *digest));
    new_digests.extend(new.iter().map(|(digest, _)| *digest));
    for &(digest, part) in new {
        if !old_digests.contains(&digest) {
            each(part, true);
        }
    }
    for &(digest, part) in old {
        if !new_digests.contains(&digest) {
            each(part, false);
        }
    }
}

//! What incremental checking (`crate::incremental`) reads of the semantic index: a digest of the
//! whole-file pre-pass (imports, summaries, roles, backend) free of absolute offsets (the few
//! it holds are located by statement), so that it compares across edits; the module-level hardware scope; the names bound in module scope.
//!
//! Across top-level statements the index carries only these: the pre-pass, module-scope
//! bindings (by name; classes and function returns are reached through them) and the module's
//! guard frame. Every field of [`SemanticModel`] is destructured in [`SemanticModel::prepass_digest`]:
//! a field added to the index fails to compile there until its author decides whether it is a
//! new channel between statements (then `incremental` must learn it).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::SemanticModel;

/// Maps a byte offset to a location that survives edits elsewhere: the text hash of the
/// top-level statement holding it and the offset inside that statement.
pub(crate) type Locate<'a> = &'a dyn Fn(usize) -> (u64, usize);

/// The hash by which incremental checking compares names (bound names, identifiers in text).
pub(crate) fn name_hash(name: &str) -> u64 {
    hash_one(name)
}

fn hash_one(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// An order-independent digest of `items` (the sum of their hashes), for hash maps and sets.
fn unordered<T>(items: impl Iterator<Item = T>, hash: impl Fn(T) -> u64) -> u64 {
    items.fold(0u64, |sum, item| sum.wrapping_add(hash(item)))
}

fn strings<S>(set: &HashSet<String, S>) -> u64 {
    unordered(set.iter(), hash_one)
}

impl SemanticModel<'_> {
    /// The whole-file part of the index, computed before the traversal: equal digests mean every
    /// rule sees the same imports, summaries, file facts, roles and backend.
    pub(crate) fn prepass_digest(&self, locate: Locate<'_>) -> u64 {
        let SemanticModel {
            source: _,
            ancestors: _,
            backend,
            imported_modules: _,
            scopes: _,
            frames: _,
            classes: _,
            compiled_names: _,
            imports,
            guard_frames: _,
            test_framework,
            summaries,
            functions: _,
            file_memo: _,
            qualified_name_memo: _,
            // Read by incremental checking, per statement (`module_binds`).
            module_binds: _,
            // Per statement, rebuilt as the traversal walks (reused statements included).
            origin_nodes: _,
            assignments: _,
            binding_site: _,
            bound_values: _,
            // From the settings, whose digest incremental checking compares first.
            converter: _,
        } = self;
        let mut state = DefaultHasher::new();
        backend.hash(&mut state);
        test_framework.hash(&mut state);
        // Import statements' offsets are left out: rules and the importer compare them with
        // other positions (order, containment), which edits elsewhere preserve, and a fix or
        // related range that points into edited text is never reused (`incremental`).
        for record in imports.records() {
            let mut copy = record.clone();
            copy.statement = 0..0;
            copy.guard = copy.guard.map(|_| 0..0);
            copy.hash(&mut state);
        }
        let super::Summaries {
            functions,
            by_node: _,
            loops,
            file,
            compiled_names,
            step_closures,
            cuda_library_scopes,
            cuda_mode_flags,
            cuda_only_callees,
            throttles,
            throttle_exits,
            comparison_scopes,
            // Intermediate results of the pre-pass, summarised by the fields above.
            ..
        } = summaries;
        // Debug text covers every field of the summaries (none holds an offset); function
        // indices are positional, and which node maps to which index follows from the texts.
        // `calls` only feeds the call graph, which matches callees by name against the file's
        // functions: calls of other names (`loss.item()`, `torch.zeros`) change nothing.
        let defined: HashSet<&str> = functions.iter().map(|f| f.name.as_str()).collect();
        for function in functions {
            let mut copy = function.clone();
            copy.calls
                .retain(|callee| defined.contains(callee.as_str()));
            copy.first_save.take().map(locate).hash(&mut state);
            format!("{copy:?}").hash(&mut state);
        }
        let mut file = file.clone();
        file.first_module_save.take().map(locate).hash(&mut state);
        format!("{file:?}").hash(&mut state);
        unordered(loops.values(), |summary| {
            let mut copy = summary.clone();
            copy.calls
                .retain(|callee| defined.contains(callee.as_str()));
            hash_one(format!("{copy:?}"))
        })
        .hash(&mut state);
        strings(compiled_names).hash(&mut state);
        strings(step_closures).hash(&mut state);
        strings(cuda_mode_flags).hash(&mut state);
        // Decided by calls in other statements (the callers' guards).
        strings(cuda_only_callees).hash(&mut state);
        // Each follows from its own statement (a condition and names bound in its function).
        throttles.len().hash(&mut state);
        throttle_exits.len().hash(&mut state);
        comparison_scopes.len().hash(&mut state);
        // Node ids of blocks that need CUDA: each follows from its own statement's text (and
        // the imports); how many there are is what can be compared across parses.
        cuda_library_scopes.len().hash(&mut state);
        state.finish()
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

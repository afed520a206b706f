//! Digests of the semantic index for incremental checking (`crate::incremental`): one of the
//! whole-file pre-pass (imports, summaries, roles, backend) and one of the traversal state at a
//! top-level statement, both free of absolute offsets so that they compare across edits.
//!
//! Every field of [`SemanticModel`] is destructured below: a field added to the index fails to
//! compile here until its author decides how it enters a digest (leaving it out is unsound).

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use super::{Binding, ClassInfo, Fact, Frame, FunctionReturns, Scope, SemanticModel};
use crate::source::TextRange;

/// Maps an absolute byte offset to a coordinate-free location: the text hash of the top-level
/// statement holding it and the offset inside that statement.
pub(crate) type Locate<'a> = &'a dyn Fn(usize) -> (u64, usize);

fn hash_one(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// An order-independent digest of `items` (the sum of their hashes), for hash maps and sets.
fn unordered<T>(items: impl Iterator<Item = T>, hash: impl Fn(T) -> u64) -> u64 {
    items.fold(0u64, |sum, item| sum.wrapping_add(hash(item)))
}

fn fact(state: &mut DefaultHasher, value: &Fact, locate: Locate<'_>) {
    let Fact {
        kind,
        device,
        origin,
        evidence,
    } = value;
    kind.hash(state);
    device.hash(state);
    evidence.hash(state);
    origin
        .map(|(start, end)| (locate(start), locate(end)))
        .hash(state);
}

fn range(state: &mut DefaultHasher, value: &TextRange, locate: Locate<'_>) {
    (locate(value.start), locate(value.end)).hash(state);
}

fn strings(set: &HashSet<String>) -> u64 {
    unordered(set.iter(), hash_one)
}

fn bindings(map: &HashMap<String, Binding>, locate: Locate<'_>) -> u64 {
    unordered(map.iter(), |(name, binding)| {
        let mut state = DefaultHasher::new();
        name.hash(&mut state);
        match binding {
            Binding::Import(qualified) => (0u8, qualified).hash(&mut state),
            Binding::Value(value) => {
                1u8.hash(&mut state);
                fact(&mut state, value, locate);
            }
            Binding::Class(index) => (2u8, index).hash(&mut state),
            Binding::Function(index) => (3u8, index).hash(&mut state),
        }
        state.finish()
    })
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
        } = self;
        let mut state = DefaultHasher::new();
        backend.hash(&mut state);
        test_framework.hash(&mut state);
        for record in imports.records() {
            let mut copy = record.clone();
            range(&mut state, &record.statement, locate);
            if let Some(guard) = &record.guard {
                range(&mut state, guard, locate);
            }
            copy.statement = 0..0;
            copy.guard = None;
            copy.hash(&mut state);
        }
        let super::Summaries {
            functions,
            by_node: _,
            loops,
            file,
            compiled_names,
            step_closures,
        } = summaries;
        // Debug text covers every field of the summaries (none holds an offset); function
        // indices are positional, and which node maps to which index follows from the texts.
        format!("{functions:?}{file:?}").hash(&mut state);
        unordered(loops.values(), |summary| hash_one(format!("{summary:?}"))).hash(&mut state);
        strings(compiled_names).hash(&mut state);
        strings(step_closures).hash(&mut state);
        state.finish()
    }

    /// The traversal state (bindings, classes, function returns, frames, guards) at this point,
    /// with offsets located through `locate`. Two equal digests at the start of the same
    /// statement text mean the rest of the traversal sees the same index.
    pub(crate) fn traversal_digest(&self, locate: Locate<'_>) -> u64 {
        let SemanticModel {
            source: _,
            ancestors,
            backend: _,
            imported_modules,
            scopes,
            frames,
            classes,
            compiled_names,
            imports: _,
            guard_frames,
            test_framework: _,
            summaries: _,
            functions,
            file_memo: _,
            qualified_name_memo: _,
        } = self;
        let mut state = DefaultHasher::new();
        ancestors.len().hash(&mut state);
        strings(imported_modules).hash(&mut state);
        strings(compiled_names).hash(&mut state);
        for Scope { bindings: map } in scopes {
            bindings(map, locate).hash(&mut state);
        }
        for frame in frames {
            match frame {
                Frame::Function {
                    name,
                    hot,
                    class,
                    node_id: _,
                    id,
                } => (0u8, name, hot, class, id).hash(&mut state),
                Frame::Class(index) => (1u8, index).hash(&mut state),
                Frame::Loop { hot, node_id: _ } => (2u8, hot).hash(&mut state),
            }
        }
        for ClassInfo {
            is_module,
            is_optimizer_like,
            attributes,
        } in classes
        {
            (is_module, is_optimizer_like).hash(&mut state);
            unordered(attributes.iter(), |(name, value)| {
                let mut entry = DefaultHasher::new();
                name.hash(&mut entry);
                fact(&mut entry, value, locate);
                entry.finish()
            })
            .hash(&mut state);
        }
        for FunctionReturns {
            class,
            name,
            returns,
            complete,
        } in functions
        {
            (class, name, complete).hash(&mut state);
            match returns.single() {
                Some(value) => fact(&mut state, &value, locate),
                None => 0u8.hash(&mut state),
            }
            for value in returns.tuple().unwrap_or(&[]) {
                fact(&mut state, value, locate);
            }
            returns.is_conflict().hash(&mut state);
        }
        for frame in guard_frames {
            (frame.scope, frame.test_code, frame.cold).hash(&mut state);
        }
        state.finish()
    }

    /// The whole-file questions rules asked so far ([`Self::file_memo`]) with their answers.
    pub(crate) fn file_memo_entries(&self) -> Vec<((&'static str, &'static str), bool)> {
        self.file_memo.borrow().clone()
    }
}

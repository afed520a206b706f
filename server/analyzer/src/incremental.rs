//! Incremental checking for editors: after an edit, rules run again only on the top-level
//! statements the edit touched, and on whatever depends on them; every other statement's
//! diagnostics are reused, shifted by the edit.
//!
//! **Invariant:** the result always equals [`crate::check_tree`] of the same text and settings.
//! A statement's diagnostics are a function of its own text, of the whole-file pre-pass (imports,
//! summaries, roles, backend: [`SemanticModel::prepass_digest`]), of the traversal state at its
//! start (bindings, classes, function returns, guards: [`SemanticModel::traversal_digest`]), and
//! of the whole-file questions rules ask (`source_mentions`). So:
//!
//! - statements are the module's named children; those before and after the changed bytes with
//!   the same range (shifted), kind and no syntax error are *clean*, the others *dirty*;
//! - a different pre-pass digest, settings or whole-file answer, or a question this module cannot
//!   re-ask, falls back to a full check;
//! - the traversal walks the index through the clean prefix without running rules, runs them on
//!   the dirty statements and on the statements after them until the traversal state at a clean
//!   statement's start equals the one recorded there by the previous check; from that statement
//!   on, the state and thus every result is the previous one, and the walk stops;
//! - a reused diagnostic whose fix or related range reaches into the dirty region (an import
//!   inserted next to it, a fact's origin) is not reused: its statement is checked again;
//! - suppressions, unfixable fixes, syntax errors and ordering are applied to the whole result
//!   every time, as `check_tree` does, so `# noqa` edits and TPU901 never depend on reuse.
//!
//! Offsets inside the digests are located by (statement text hash, offset in the statement), so
//! a digest recorded before an edit still compares after it.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::checker::{Dispatcher, finish, new_model, walk};
use crate::diagnostic::Diagnostic;
use crate::settings::Settings;
use crate::source::TextRange;
use crate::suppression::Suppressions;
use crate::syntax::NodeExt;

/// What a check keeps for the next one: per top-level statement, its range, text hash, the
/// traversal digest at its start and its diagnostics before suppressions.
#[derive(Debug, Clone)]
pub struct IncrementalState {
    settings: u64,
    prepass: u64,
    /// Whole-file questions asked by rules (`("source_mentions", needle)`), ever.
    questions: Vec<(&'static str, &'static str)>,
    statements: Vec<Statement>,
}

#[derive(Debug, Clone)]
struct Statement {
    range: TextRange,
    kind: u16,
    has_error: bool,
    hash: u64,
    /// The traversal digest after `enter` of the statement's node; `None` when not computed.
    entry: Option<u64>,
    diagnostics: Vec<Diagnostic>,
    comments: Vec<TextRange>,
}

/// How much of the previous result a check reused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reuse {
    /// Top-level statements in the new text.
    pub statements: usize,
    /// Statements whose rules ran.
    pub checked: usize,
    /// Statements the traversal walked (rules or not).
    pub walked: usize,
    /// Why everything was checked, when it was.
    pub full: Option<&'static str>,
}

/// Which reuse the checker allows. Only [`ReusePolicy::Sound`] keeps the invariant; the other
/// exists so that tests can show the equivalence test catches an unsound policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReusePolicy {
    Sound,
    /// Reuses every statement whose text did not change, ignoring what it depends on.
    UnsoundTextOnly,
}

/// The result of [`check_tree_incremental`].
pub struct IncrementalCheck {
    pub diagnostics: Vec<Diagnostic>,
    pub state: IncrementalState,
    pub reuse: Reuse,
}

/// Checks `tree` (parsed from `source`), reusing `previous` (the text and state of an earlier
/// check of the same document) where that is sound. The diagnostics equal
/// [`crate::check_tree`]`(source, tree, settings)`.
pub fn check_tree_incremental(
    source: &str,
    tree: &Tree,
    settings: &Settings,
    previous: Option<(&str, &IncrementalState)>,
) -> IncrementalCheck {
    check_with_policy(source, tree, settings, previous, ReusePolicy::Sound)
}

fn hash_one(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The changed bytes: `(prefix, old_end, delta)` where `old[..prefix]` and `old[old_end..]` are
/// unchanged and the new text is `old_end + delta` long after them.
fn changed_bytes(old: &str, new: &str) -> (usize, usize, isize) {
    let (old_bytes, new_bytes) = (old.as_bytes(), new.as_bytes());
    let limit = old_bytes.len().min(new_bytes.len());
    let prefix = old_bytes
        .iter()
        .zip(new_bytes)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old_bytes[prefix..]
        .iter()
        .rev()
        .zip(new_bytes[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count()
        .min(limit - prefix);
    let delta = new_bytes.len() as isize - old_bytes.len() as isize;
    (prefix, old_bytes.len() - suffix, delta)
}

/// How the new statements relate to the old ones.
struct Plan<'p> {
    old: &'p IncrementalState,
    old_source: &'p str,
    /// New statements `..prefix` are the old ones; new `suffix..` are old `suffix + shift..`.
    prefix: usize,
    suffix: usize,
    /// Old index = new index + `index_shift` in the suffix.
    index_shift: isize,
    /// Old byte span no reused range may touch, and the byte shift after it.
    dirty: Range<usize>,
    delta: isize,
}

impl Plan<'_> {
    fn old_index(&self, new: usize) -> Option<usize> {
        if new < self.prefix {
            Some(new)
        } else if new >= self.suffix {
            usize::try_from(new as isize + self.index_shift).ok()
        } else {
            None
        }
    }

    /// An old range in new coordinates, when it lies wholly outside the dirty span.
    fn map(&self, range: &TextRange) -> Option<TextRange> {
        if range.start < self.dirty.start && range.end <= self.dirty.start {
            Some(range.clone())
        } else if range.start >= self.dirty.end && range.end > self.dirty.end {
            let shift = |offset: usize| (offset as isize + self.delta) as usize;
            Some(shift(range.start)..shift(range.end))
        } else {
            None
        }
    }

    /// An old statement's diagnostics in new coordinates, or `None` if one reaches the dirty span.
    fn reused(&self, statement: &Statement) -> Option<Vec<Diagnostic>> {
        let mut out = Vec::with_capacity(statement.diagnostics.len());
        for diagnostic in &statement.diagnostics {
            let mut moved = diagnostic.clone();
            moved.range = self.map(&diagnostic.range)?;
            for related in &mut moved.related {
                related.range = self.map(&related.range)?;
            }
            if let Some(fix) = &mut moved.fix {
                for edit in &mut fix.edits {
                    edit.range = self.map(&edit.range)?;
                }
            }
            out.push(moved);
        }
        Some(out)
    }
}

fn plan<'p>(
    old_source: &'p str,
    old: &'p IncrementalState,
    source: &str,
    nodes: &[Node<'_>],
) -> Plan<'p> {
    let (prefix_bytes, old_end, delta) = changed_bytes(old_source, source);
    let same = |o: &Statement, n: &Node<'_>, shift: isize| {
        !o.has_error
            && !n.has_error()
            && o.kind == n.kind_id()
            && (o.range.start as isize + shift) as usize == n.start_byte()
            && (o.range.end as isize + shift) as usize == n.end_byte()
    };
    let olds = &old.statements;
    let mut prefix = 0;
    while prefix < olds.len().min(nodes.len())
        && olds[prefix].range.end <= prefix_bytes
        && same(&olds[prefix], &nodes[prefix], 0)
    {
        prefix += 1;
    }
    let mut matched = 0;
    while matched < (olds.len() - prefix).min(nodes.len() - prefix) {
        let o = &olds[olds.len() - 1 - matched];
        let n = &nodes[nodes.len() - 1 - matched];
        if o.range.start < old_end || !same(o, n, delta) {
            break;
        }
        matched += 1;
    }
    let (old_first, old_last) = (prefix, olds.len() - matched);
    let start = olds
        .get(old_first)
        .filter(|_| old_first < old_last)
        .map_or(prefix_bytes, |o| o.range.start.min(prefix_bytes));
    let end = if old_first < old_last {
        olds[old_last - 1].range.end.max(old_end)
    } else {
        old_end
    };
    Plan {
        old,
        old_source,
        prefix,
        suffix: nodes.len() - matched,
        index_shift: olds.len() as isize - nodes.len() as isize,
        dirty: start..end,
        delta,
    }
}

/// What the walk does at one statement.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Check,
    Reuse,
}

/// [`check_tree_incremental`] under an explicit [`ReusePolicy`].
pub fn check_with_policy(
    source: &str,
    tree: &Tree,
    settings: &Settings,
    previous: Option<(&str, &IncrementalState)>,
    policy: ReusePolicy,
) -> IncrementalCheck {
    let root = tree.root_node();
    let mut cursor = root.walk();
    let nodes: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
    let settings_digest = hash_one(settings);
    let mut semantic = new_model(source, tree, settings);
    let mut full = None;
    let plan = match previous {
        None => {
            full = Some("no previous check");
            None
        }
        Some((_, old)) if old.settings != settings_digest => {
            full = Some("settings changed");
            None
        }
        Some((old_source, old)) => Some(plan(old_source, old, source, &nodes)),
    };
    // Text hashes: carried for clean statements, computed for the others.
    let hashes: Vec<u64> = (0..nodes.len())
        .map(|index| {
            plan.as_ref()
                .and_then(|plan| plan.old_index(index))
                .map(|old| {
                    plan.as_ref()
                        .map_or(0, |plan| plan.old.statements[old].hash)
                })
                .unwrap_or_else(|| {
                    let node = nodes[index];
                    hash_one((node.kind_id(), &source[node.start_byte()..node.end_byte()]))
                })
        })
        .collect();
    let starts: Vec<usize> = nodes.iter().map(Node::start_byte).collect();
    let locate = |offset: usize| -> (u64, usize) {
        let index = starts.partition_point(|&start| start <= offset);
        match index.checked_sub(1) {
            Some(index) if offset <= nodes[index].end_byte() => {
                (hashes[index], offset - starts[index])
            }
            _ => (u64::MAX, offset),
        }
    };
    let prepass = semantic.prepass_digest(&locate);
    let mut plan = plan.filter(|plan| {
        if policy == ReusePolicy::UnsoundTextOnly {
            return true;
        }
        if plan.old.prepass != prepass {
            full = Some("module summary changed");
            return false;
        }
        for &(question, needle) in &plan.old.questions {
            if question != "source_mentions" {
                full = Some("a whole-file question this module cannot re-ask");
                return false;
            }
            if plan.old_source.contains(needle) != source.contains(needle) {
                full = Some("a whole-file answer changed");
                return false;
            }
        }
        true
    });
    // Clean statements' diagnostics in new coordinates; `None` forces a check.
    let reusable: Vec<Option<Vec<Diagnostic>>> = (0..nodes.len())
        .map(|index| {
            let plan = plan.as_ref()?;
            plan.reused(&plan.old.statements[plan.old_index(index)?])
        })
        .collect();
    let last_forced = plan.as_ref().and_then(|plan| {
        (plan.suffix..nodes.len())
            .rev()
            .find(|&index| reusable[index].is_none())
    });

    let mut dispatcher = Dispatcher::new(source, tree, settings);
    let mut module_diagnostics = Vec::new();
    let mut records: Vec<Statement> = Vec::with_capacity(nodes.len());
    let mut suppressions = Suppressions::default();
    let mut next = 0usize;
    let mut mode = Mode::Check;
    let mut converged = false;
    let mut stop = nodes.len();
    let mut checked = 0usize;
    walk(tree, &mut semantic, |semantic, node, dispatchable| {
        if next < nodes.len() && node.id() == nodes[next].id() {
            let index = next;
            next += 1;
            let old = plan.as_ref().and_then(|plan| {
                let old = plan.old_index(index)?;
                Some(&plan.old.statements[old])
            });
            let mut entry = old.and_then(|old| old.entry);
            mode = match &plan {
                None => Mode::Check,
                Some(plan) if index < plan.prefix => Mode::Reuse,
                Some(plan) if index < plan.suffix => Mode::Check,
                Some(_) if converged => Mode::Reuse,
                Some(_) => {
                    let digest = semantic.traversal_digest(&locate);
                    converged = policy == ReusePolicy::UnsoundTextOnly || Some(digest) == entry;
                    entry = Some(digest);
                    if converged { Mode::Reuse } else { Mode::Check }
                }
            };
            if mode == Mode::Reuse && reusable[index].is_none() {
                mode = Mode::Check;
            }
            if mode == Mode::Check && entry.is_none() || plan.is_some() && mode == Mode::Check {
                entry = Some(semantic.traversal_digest(&locate));
            }
            if converged && last_forced.is_none_or(|last| index > last) {
                stop = index;
                return false;
            }
            if mode == Mode::Check {
                checked += 1;
            }
            records.push(Statement {
                range: node.byte_range(),
                kind: node.kind_id(),
                has_error: node.has_error(),
                hash: hashes[index],
                entry,
                diagnostics: match mode {
                    Mode::Reuse => reusable[index].clone().unwrap_or_default(),
                    Mode::Check => Vec::new(),
                },
                comments: Vec::new(),
            });
        }
        if node.kind_name() == "comment" {
            suppressions.add_comment(node, source);
            if let Some(record) = records.last_mut() {
                record.comments.push(node.byte_range());
            }
        }
        if dispatchable && (records.is_empty() || mode == Mode::Check) {
            let sink = match records.last_mut() {
                Some(record) => &mut record.diagnostics,
                None => &mut module_diagnostics,
            };
            dispatcher.run(semantic, node, sink);
        }
        true
    });
    let walked = records.len();
    // Statements after the walk stopped: the previous records, shifted.
    if let Some(plan) = &plan {
        for index in stop..nodes.len() {
            let Some(old) = plan.old_index(index).map(|old| &plan.old.statements[old]) else {
                continue;
            };
            let comments: Vec<TextRange> = old
                .comments
                .iter()
                .filter_map(|range| plan.map(range))
                .collect();
            for range in &comments {
                suppressions.add_comment_text(range.start, &source[range.clone()]);
            }
            records.push(Statement {
                range: nodes[index].byte_range(),
                kind: old.kind,
                has_error: old.has_error,
                hash: old.hash,
                entry: old.entry,
                diagnostics: reusable[index].clone().unwrap_or_default(),
                comments,
            });
        }
    }
    let mut questions: Vec<(&'static str, &'static str)> = semantic
        .file_memo_entries()
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    if let Some(plan) = &plan {
        questions.extend(plan.old.questions.iter().copied());
    }
    questions.sort_unstable();
    questions.dedup();
    let mut raw = module_diagnostics;
    for record in &records {
        raw.extend(record.diagnostics.iter().cloned());
    }
    let diagnostics = finish(raw, suppressions, source, tree, settings);
    if plan.is_none() && full.is_none() {
        full = Some("no previous check");
    }
    plan.take();
    IncrementalCheck {
        diagnostics,
        reuse: Reuse {
            statements: nodes.len(),
            checked,
            walked,
            full,
        },
        state: IncrementalState {
            settings: settings_digest,
            prepass,
            questions,
            statements: records,
        },
    }
}

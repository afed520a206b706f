//! Incremental checking for editors: after an edit, rules run again only on the top-level
//! statements the edit touched and on the statements that depend on them; every other
//! statement's diagnostics are reused, shifted by the edit.
//!
//! **Invariant:** the result always equals [`crate::check_tree`] of the same text and settings.
//! Across top-level statements the semantic index carries three things: the whole-file pre-pass
//! (imports, function and loop summaries, file facts, roles, backend:
//! `SemanticModel::prepass_digest`), module-scope bindings by name (classes and function returns
//! are reached through them), and the module's hardware scope (changed by a module-level early
//! exit). Rules also ask whole-file questions (`source_mentions`). So:
//!
//! - statements are the module's named children; those before and after the changed bytes with
//!   the same range (shifted), kind and no syntax error are *clean*, the others *dirty*;
//! - different settings or a different set of rules that run (the token prefilter,
//!   `crate::prefilter`, skips rules whose words a file lacks), a root that is not (or was not) a `module` (tree-sitter makes the root
//!   an `ERROR` when nothing parses, and rules are then silent everywhere), a different
//!   file-wide part of the pre-pass digest, a changed whole-file answer or a question
//!   this module cannot re-ask fall back to a full check;
//! - the other parts of the pre-pass are compared where they are read (`semantic::PrepassDigest`): a
//!   statement holding a function or loop summary or a marked node that changed, appeared or
//!   went is checked again, and so is every statement that mentions a function whose by-name
//!   part changed; such a statement taints what it binds unless it did the same to the index as
//!   before (equal `ModuleEffects`, as for an edited definition below);
//! - the names the dirty statements bind in module scope, before and after the edit (for
//!   module-level code that is not a definition, also every name its text may assign; for a
//!   class, also its methods' names, which `obj.method(...)` reads without the class's), are
//!   *tainted*; a later
//!   statement that mentions a tainted identifier anywhere in its text is checked again, and
//!   the names it binds are tainted in turn; so is every statement after a change of the
//!   module's hardware scope. Exceptions: when the edit changed one definition into one
//!   definition, or a clean definition is checked again, and it binds the same names and did
//!   the same to the index as before (equal [`ModuleEffects`], every fact's origin outside the
//!   edited lines and moved with the text), it taints nothing (a clean assignment or other
//!   statement always taints what it binds: rules read a name's bound value expression
//!   through the index, `tensor_values::last_assignment_value`, and evaluate the names in it
//!   again, which its effects do not record); when what it did differs only in
//!   what its functions return, it taints its own name and the functions whose returns
//!   changed. A class's method names are never tainted when classes of two other names in
//!   clean statements define the same method (`obj.method(...)` reads a method by name only
//!   when one class defines it);
//! - a few rules read other statements' text directly (`READS_OTHER_STATEMENTS`): the
//!   statements mentioning an identifier they report on (`jax`, `use_spmd`, `mark_sharding`,
//!   `GradScaler`, the clocks, the dtypes) are checked again after an edit that can change
//!   what they read: after the edit for the rules that read earlier text (outside function
//!   bodies for the ones that read only their own function's text from there), before it too
//!   for a rule that reads the whole file, and for the ones that read module-level `assert`
//!   and expression statements of their block, only when the edit changed one of those;
//! - a reused diagnostic whose range, fix or related range reaches into the dirty span (an import
//!   inserted next to an edited one, a fact's origin) is not reused: its statement is checked
//!   again (the importer's whole-text question, whether an alias is free, is re-asked like
//!   `source_mentions`);
//! - the traversal keeps the index current through reused statements without walking them: it
//!   replays what each did to the index last time ([`ModuleEffects`]: classes, functions,
//!   module-scope changes, the module's guard frame; offsets shifted), which equals walking it
//!   since it reads nothing that changed; it stops once no statement after it needs checking and
//!   the module's hardware scope is the recorded one;
//! - the pre-pass reuses each unchanged statement's part (function and loop summaries, import
//!   records: `SummaryCache`), so its cost follows the edit too;
//! - suppressions, unfixable fixes, syntax errors and ordering are applied to the whole result
//!   every time, as `check_tree` does, so `# noqa` edits and TPU901 never depend on reuse.

use crate::hash::KeySet;
use crate::kind;
use std::hash::Hash;
use std::ops::Range;
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use crate::checker::{
    Dispatcher, RunningRules, finish, finish_syntax, new_model_reusing, replay_statement, walk_node,
};
use crate::diagnostic::{Diagnostic, Edit};
use crate::fix::importer::{CONTAINS_WORD, contains_word};
use crate::prefilter::{Prefilter, TokenCounts};
use crate::semantic::{ModuleEffects, PrepassChanges, PrepassDigest, SummaryCache, name_hash};
use crate::settings::Settings;
use crate::source::TextRange;
use crate::suppression::{Suppressions, may_hold_directive};
use crate::syntax::NodeExt;

/// How often each identifier occurs in a text, by hash, sorted ([`identifier_counts`]).
type IdentifierCounts = Arc<[(u64, u32)]>;

/// What a check keeps for the next one: per top-level statement, its range, text hash, the
/// names it binds and mentions, and its diagnostics before suppressions.
#[derive(Debug, Clone)]
pub struct IncrementalState {
    settings: u64,
    /// Which rules ran (enabled, and with their words in the file: `crate::prefilter`).
    running: u64,
    /// The root's kind: `module`, or `ERROR` when nothing parsed (then no rule runs anywhere).
    root_kind: u16,
    /// The text had a syntax error somewhere.
    has_error: bool,
    prepass: PrepassDigest,
    /// Whole-file questions asked by rules (`("source_mentions", needle)`), ever.
    questions: Vec<(&'static str, &'static str)>,
    statements: Vec<Statement>,
    /// The pre-pass of each top-level statement, for the next check's pre-pass to reuse.
    summaries: Arc<SummaryCache>,
    /// Where a fix would add a module import (`fix::edits::insert_module_import`: after the
    /// leading imports and docstring): fixes anywhere in the file put theirs there.
    import_insertion: Edit,
    /// How often each word a rule declares occurs in the text (`crate::prefilter`): the next
    /// check scans only its changed bytes for them.
    tokens: TokenCounts,
}

#[derive(Debug, Clone)]
struct Statement {
    range: TextRange,
    kind: u16,
    has_error: bool,
    hash: u64,
    /// The module's hardware scope at the statement's start.
    root_guard: u64,
    /// Hashes of the names it binds for later statements (see the module docs), sorted.
    binds: Vec<u64>,
    /// For a class definition, the [`name_hash`]es of the methods it defines directly, sorted.
    methods: Arc<[u64]>,
    /// The names its text may bind (its definition's name and methods, or `assigned_names`):
    /// part of `binds`, carried while its text is unchanged.
    text_binds: Arc<[u64]>,
    /// Hashes of every identifier in its text, sorted.
    /// Shared: a clean statement carries it from check to check unchanged.
    mentions: Arc<[u64]>,
    /// How often each of `mentions` occurs in its text ([`identifier_counts`]), kept when an
    /// edit changed it: the next edit of the same statement (typing in a method of a big class)
    /// scans only the words it changed ([`edited_identifier_counts`]), not the whole text.
    mention_counts: Option<IdentifierCounts>,
    diagnostics: Vec<Diagnostic>,
    /// Its comments that may hold a suppression directive (`suppression::may_hold_directive`;
    /// the others record nothing), read again when it is reused.
    comments: Vec<TextRange>,
    /// What it did to the index (replayed when it is reused; `None` if it was not recorded).
    effects: Option<ModuleEffects>,
}

impl IncrementalState {
    /// Whether the checked text had a syntax error (an editor keeps the last check without one
    /// too: after an unclosed bracket is closed, it is usually the closer of the two texts).
    pub fn has_syntax_error(&self) -> bool {
        self.has_error
    }
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
    /// Statements checked again, beyond the edited ones, because a function or loop summary
    /// they hold, or the by-name part of a function they mention, changed.
    pub summaries: usize,
    /// Why each checked statement was checked (the first reason that applies, in this order;
    /// they add up to `checked` when the check reused anything).
    pub why: CheckedBecause,
    /// Why everything was checked, when it was.
    pub full: Option<&'static str>,
}

/// Per reason, how many statements an incremental check checked again (see [`Reuse::why`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckedBecause {
    /// The edit changed them (or they have a syntax error, before or after it).
    pub edited: usize,
    /// The module's hardware scope at their start changed.
    pub guard: usize,
    /// They hold or read by name a part of the pre-pass that changed (`Reuse::summaries`, and
    /// the same before the edit).
    pub summary: usize,
    /// They mention a name a checked statement bound (taint).
    pub tainted: usize,
    /// They mention an identifier a rule of `READS_OTHER_STATEMENTS` reports on.
    pub triggered: usize,
    /// A diagnostic of theirs reaches into the changed span.
    pub diagnostics_moved: usize,
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

/// Checks `tree` (parsed from `source`), reusing one of `previous` (texts and states of earlier
/// checks of the same document; the one with the fewest statements to check again) where that
/// is sound. The diagnostics equal [`crate::check_tree`]`(source, tree, settings)`.
pub fn check_tree_incremental(
    source: &str,
    tree: &Tree,
    settings: &Settings,
    previous: &[(&str, &IncrementalState)],
) -> IncrementalCheck {
    check_with_policy(source, tree, settings, previous, ReusePolicy::Sound)
}

fn hash_one(value: impl Hash) -> u64 {
    crate::hash::digest(value)
}

/// The changed bytes: `(prefix, old_end, delta)` where `old[..prefix]` and `old[old_end..]` are
/// unchanged and the new text is `old_end + delta` long after them.
fn changed_bytes(old: &str, new: &str) -> (usize, usize, isize) {
    let (old_bytes, new_bytes) = (old.as_bytes(), new.as_bytes());
    let limit = old_bytes.len().min(new_bytes.len());
    let mut prefix = common_prefix(old_bytes, new_bytes);
    // Whole characters only: `é` and `ü` share their first byte, `é` and `©` their last.
    while !(old.is_char_boundary(prefix) && new.is_char_boundary(prefix)) {
        prefix -= 1;
    }
    let mut suffix = common_suffix(&old_bytes[prefix..], &new_bytes[prefix..]).min(limit - prefix);
    while !(old.is_char_boundary(old.len() - suffix) && new.is_char_boundary(new.len() - suffix)) {
        suffix -= 1;
    }
    let delta = new_bytes.len() as isize - old_bytes.len() as isize;
    (prefix, old_bytes.len() - suffix, delta)
}

/// How many leading bytes `a` and `b` share: compared a block at a time (a slice comparison, which
/// the standard library vectorises), then byte by byte in the first block that differs. Runs over
/// the whole text at every keystroke.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let limit = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= limit && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..limit]
        .iter()
        .zip(&b[at..limit])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many trailing bytes `a` and `b` share (as [`common_prefix`], from the ends).
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let limit = a.len().min(b.len());
    let (a_end, b_end) = (a.len(), b.len());
    let mut at = 0;
    while at + BLOCK <= limit
        && a[a_end - at - BLOCK..a_end - at] == b[b_end - at - BLOCK..b_end - at]
    {
        at += BLOCK;
    }
    at + a[..a_end - at]
        .iter()
        .rev()
        .zip(b[..b_end - at].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// How the new statements relate to the old ones.
struct Plan<'p> {
    old_source: &'p str,
    old: &'p IncrementalState,
    /// New statements `..prefix` are the old ones; new `suffix..` are old `suffix + shift..`.
    prefix: usize,
    suffix: usize,
    /// Old index = new index + `index_shift` in the suffix.
    index_shift: isize,
    /// Old byte span no reused range may touch, and the byte shift after it.
    dirty: Range<usize>,
    delta: isize,
    /// The old lines holding the changed bytes (narrower than `dirty`, which spans statements).
    edited_lines: Range<usize>,
}

impl Plan<'_> {
    /// How many new statements changed (not counting the ones that depend on them).
    fn dirty_statements(&self) -> usize {
        self.suffix - self.prefix
    }

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

    /// An old insertion point (an empty or short range) in new coordinates: before the changed
    /// statements, or after them; `None` inside or at their edge.
    fn map_insertion(&self, range: &TextRange) -> Option<TextRange> {
        if range.end < self.dirty.start {
            Some(range.clone())
        } else if range.start > self.dirty.end {
            let shift = |offset: usize| (offset as isize + self.delta) as usize;
            Some(shift(range.start)..shift(range.end))
        } else {
            None
        }
    }

    /// An old offset range in new coordinates, when it lies wholly outside the edited lines.
    fn map_outside_edited_lines(&self, (start, end): (usize, usize)) -> Option<(usize, usize)> {
        if end <= self.edited_lines.start {
            Some((start, end))
        } else if start >= self.edited_lines.end {
            let shift = |offset: usize| (offset as isize + self.delta) as usize;
            Some((shift(start), shift(end)))
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

/// `changed`: [`changed_bytes`]`(old_source, source)`.
fn plan<'p>(
    old_source: &'p str,
    old: &'p IncrementalState,
    source: &str,
    nodes: &[Node<'_>],
    changed: (usize, usize, isize),
) -> Plan<'p> {
    let (prefix_bytes, old_end, delta) = changed;
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
    // Whole lines inserted or deleted leave the lines around them as they were. The shortest
    // diff may cut an inserted (or deleted) line in two (`    # x\n` inserted before `    y`
    // reads as `# x\n    ` after the indent): slide a pure insertion or deletion back to the
    // line start when the bytes allow.
    let at_line_start = |offset: usize| offset == 0 || old_source.as_bytes()[offset - 1] == b'\n';
    let (old_bytes, new_bytes) = (old_source.as_bytes(), source.as_bytes());
    let (mut prefix_bytes, mut old_end) = (prefix_bytes, old_end);
    let mut new_end = (old_end as isize + delta) as usize;
    // The slide moves byte by byte; it may only stop between characters.
    let on_boundaries = |prefix: usize, old_end: usize, new_end: usize| {
        old_source.is_char_boundary(prefix)
            && source.is_char_boundary(prefix)
            && old_source.is_char_boundary(old_end)
            && source.is_char_boundary(new_end)
    };
    let mut last_whole = (prefix_bytes, old_end, new_end);
    while prefix_bytes > 0 && !at_line_start(prefix_bytes) {
        let slides = if old_end == prefix_bytes {
            new_end > prefix_bytes && new_bytes[new_end - 1] == old_bytes[prefix_bytes - 1]
        } else if new_end == prefix_bytes {
            old_bytes[old_end - 1] == old_bytes[prefix_bytes - 1]
        } else {
            false
        };
        if !slides {
            break;
        }
        prefix_bytes -= 1;
        old_end -= 1;
        new_end -= 1;
        if on_boundaries(prefix_bytes, old_end, new_end) {
            last_whole = (prefix_bytes, old_end, new_end);
        }
    }
    (prefix_bytes, old_end, new_end) = last_whole;
    let inserted = &source[prefix_bytes..new_end];
    let line_start = if at_line_start(prefix_bytes) {
        prefix_bytes
    } else {
        old_source[..prefix_bytes]
            .rfind('\n')
            .map_or(0, |at| at + 1)
    };
    let line_end = if at_line_start(old_end) && (inserted.is_empty() || inserted.ends_with('\n')) {
        old_end
    } else {
        old_source[old_end..]
            .find('\n')
            .map_or(old_source.len(), |at| old_end + at + 1)
    };
    Plan {
        old_source,
        old,
        prefix,
        suffix: nodes.len() - matched,
        index_shift: olds.len() as isize - nodes.len() as isize,
        dirty: start..end,
        delta,
        edited_lines: line_start..line_end,
    }
}

/// Which other statements a rule of [`READS_OTHER_STATEMENTS`] reads, from the statement it
/// reports on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OtherStatements {
    /// Only text before it (earlier statements, an earlier part of the file): an edit after it
    /// cannot change what it reports.
    Earlier,
    /// As `Earlier`, but from a function's body only text of the same function (the enclosing
    /// block, the function's earlier statements): a function definition that mentions none of
    /// the rule's identifiers outside its body (decorators, parameters) reads no other
    /// statement.
    EarlierOutsideFunctionBodies,
    /// The module-level `assert` statements and expression statements of its block (every
    /// block inside a definition or a compound statement lies inside its top-level statement):
    /// only an edit that changes, adds or removes one of those at module level can.
    BlockAssertsAndCalls,
    /// Anywhere in the file.
    File,
}

/// Rules that read other statements' text directly, not through the index (`TPU412`: an
/// earlier `jax_import_guard()` or device use in the block; `TPU704`: an earlier device use;
/// `TPU703`: an earlier `mark_sharding(`; `TPU505`: a line of the file that autocasts to
/// bfloat16; `TPU111`: the text between a clock read and the one it is subtracted from;
/// `TPU503` and `TPU501`: an `assert … .dtype …` among the statements of the same block, which
/// makes the dtype deliberate and the fix not offered; `TPU708`: the expression statements of
/// the block around an `xm.optimizer_step(...)`, reported from there), with what they read and
/// identifiers one of which every statement they report on mentions: after an edit that can
/// change what they read, statements mentioning one are checked again. (Rules should read
/// beyond their statement only through the index or `source_mentions`; the property test finds
/// the ones that do not.)
const READS_OTHER_STATEMENTS: &[(&str, OtherStatements, &[&str])] = &[
    (
        "TPU412",
        OtherStatements::EarlierOutsideFunctionBodies,
        &["jax"],
    ),
    (
        "TPU704",
        OtherStatements::EarlierOutsideFunctionBodies,
        &["use_spmd"],
    ),
    ("TPU703", OtherStatements::Earlier, &["mark_sharding"]),
    ("TPU505", OtherStatements::File, &["GradScaler"]),
    (
        "TPU503",
        OtherStatements::BlockAssertsAndCalls,
        &["float16", "half"],
    ),
    (
        "TPU501",
        OtherStatements::BlockAssertsAndCalls,
        &["float64", "double"],
    ),
    (
        "TPU708",
        OtherStatements::BlockAssertsAndCalls,
        &["optimizer_step"],
    ),
    (
        "TPU111",
        OtherStatements::EarlierOutsideFunctionBodies,
        &[
            "time",
            "perf_counter",
            "monotonic",
            "time_ns",
            "perf_counter_ns",
            "monotonic_ns",
        ],
    ),
];

/// Whether `byte` continues an identifier (a letter, digit, `_`, or part of a non-ASCII
/// character).
fn word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// Calls `found` with the hash of each identifier occurring in `text` (words of letters, digits
/// and `_` not starting with a digit; in strings and comments too, which only makes the test
/// more conservative). Each identifier is a maximal run of [`word_byte`]s less its leading
/// digits, so it depends on that run alone.
fn for_each_identifier(text: &str, mut found: impl FnMut(u64)) {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_alphabetic() || byte == b'_' || byte >= 0x80 {
            let start = index;
            while index < bytes.len() && word_byte(bytes[index]) {
                index += 1;
            }
            found(name_hash(&text[start..index]));
        } else {
            index += 1;
        }
    }
}

/// Hashes of the identifiers in `text` ([`for_each_identifier`]), sorted.
fn identifiers(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for_each_identifier(text, |hash| out.push(hash));
    out.sort_unstable();
    out.dedup();
    out
}

/// How often each identifier occurs in `text`, by hash, sorted: [`identifiers`] with counts.
fn identifier_counts(text: &str) -> Vec<(u64, u32)> {
    let mut all = Vec::new();
    for_each_identifier(text, |hash| all.push(hash));
    all.sort_unstable();
    let mut out: Vec<(u64, u32)> = Vec::new();
    for hash in all {
        match out.last_mut() {
            Some((last, count)) if *last == hash => *count = count.saturating_add(1),
            _ => out.push((hash, 1)),
        }
    }
    out
}

/// The [`identifier_counts`] of `new` from `counts`, those of `old`: the changed bytes widened
/// to whole runs of [`word_byte`]s (a word byte before or after them continues a word they
/// changed), the old identifiers there taken out and the new ones added. Outside the widened
/// span both texts hold the same runs, each bounded by the same byte (or the text's end), so
/// the same identifiers. `None` when `counts` lack an identifier of `old` (they are not its
/// counts): the caller counts afresh.
fn edited_identifier_counts(
    counts: &[(u64, u32)],
    old: &str,
    new: &str,
) -> Option<Vec<(u64, u32)>> {
    let (old_bytes, new_bytes) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(old_bytes, new_bytes);
    let suffix = common_suffix(&old_bytes[prefix..], &new_bytes[prefix..]);
    let mut start = prefix;
    while start > 0 && word_byte(old_bytes[start - 1]) {
        start -= 1;
    }
    let (mut old_end, mut new_end) = (old_bytes.len() - suffix, new_bytes.len() - suffix);
    while old_end < old_bytes.len() && word_byte(old_bytes[old_end]) {
        old_end += 1;
        new_end += 1;
    }
    // The widened span starts and ends at an ASCII byte or an end of the text: whole
    // characters.
    let (gone, added) = (old.get(start..old_end)?, new.get(start..new_end)?);
    let mut counts = counts.to_vec();
    let mut missing = false;
    for_each_identifier(gone, |hash| {
        match counts.binary_search_by_key(&hash, |&(known, _)| known) {
            Ok(at) if counts[at].1 > 0 => counts[at].1 -= 1,
            _ => missing = true,
        }
    });
    if missing {
        return None;
    }
    for_each_identifier(added, |hash| {
        match counts.binary_search_by_key(&hash, |&(known, _)| known) {
            Ok(at) => counts[at].1 = counts[at].1.saturating_add(1),
            Err(at) => counts.insert(at, (hash, 1)),
        }
    });
    counts.retain(|&(_, count)| count > 0);
    Some(counts)
}

/// Hashes of the names module-level code may assign, read from its text (rules that look for
/// "the last assignment of `x`" search the module's text, not the index): every identifier
/// before an `=` on its line that is not a comparison (keyword arguments included, which only
/// over-approximates), after `for` up to `in`, after `as`, `import`, `del`, `global`,
/// `nonlocal`, and the names of nested definitions.
fn assigned_names(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for line in text.lines() {
        let bytes = line.as_bytes();
        let assignment = (0..bytes.len()).rev().find(|&at| {
            bytes[at] == b'='
                && bytes.get(at + 1) != Some(&b'=')
                && !(at > 0 && matches!(bytes[at - 1], b'=' | b'!' | b'<' | b'>'))
        });
        if let Some(at) = assignment {
            out.extend(identifiers(&line[..at]));
        }
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|word| !word.is_empty())
            .collect();
        for (index, word) in words.iter().enumerate() {
            match *word {
                "as" | "def" | "class" => {
                    if let Some(next) = words.get(index + 1) {
                        out.push(name_hash(next));
                    }
                }
                "import" | "del" | "global" | "nonlocal" => {
                    out.extend(words[index + 1..].iter().map(|word| name_hash(word)));
                }
                "for" => out.extend(
                    words[index + 1..]
                        .iter()
                        .take_while(|word| **word != "in")
                        .map(|word| name_hash(word)),
                ),
                _ => {}
            }
        }
    }
    out
}

/// Where a fix would add a module import (a probe import line; the offset and the line breaks
/// around it are what fixes share).
fn import_insertion(source: &str, root: Node<'_>) -> Edit {
    crate::fix::edits::insert_module_import(source, root, "import _")
}

/// The names a definition statement defines (a decorated definition's inner name), by hash.
fn defined_name(node: Node<'_>, source: &str) -> Option<u64> {
    let name = crate::syntax::undecorated(node)?.field("name")?;
    Some(name_hash(&source[name.start_byte()..name.end_byte()]))
}

/// The [`name_hash`]es of the methods a class definition defines directly in its body.
fn method_names(node: Node<'_>, source: &str) -> Vec<u64> {
    crate::syntax::undecorated(node)
        .filter(|definition| definition.is(kind::CLASS_DEFINITION))
        .and_then(|class| class.field("body"))
        .map(|body| {
            crate::syntax::methods(body)
                .filter_map(|method| method.field("name"))
                .map(|name| name_hash(&source[name.start_byte()..name.end_byte()]))
                .collect()
        })
        .unwrap_or_default()
}

/// What a definition checked again (the edit's one changed definition, or a clean statement),
/// binding the same names as before, taints when its effects on the index differ only in what
/// its functions return: its own names but its methods' (`binds` less `methods`, and the name
/// it defines), and the functions whose returns changed, but for methods another class defines
/// too (`defined_elsewhere`). `None` when the difference is more than that, or an origin lies
/// on the edited lines: then everything it binds is tainted.
fn changed_names(
    old: &Statement,
    new: &Statement,
    (own, binds, methods): (u64, &[u64], &[u64]),
    plan: &Plan<'_>,
    defined_elsewhere: &dyn Fn(u64) -> bool,
) -> Option<Vec<u64>> {
    if old.binds != binds || *old.methods != *methods {
        return None;
    }
    let old_effects = old
        .effects
        .as_ref()?
        .mapped(&|range| plan.map_outside_edited_lines(range))?;
    let changed = old_effects.functions_with_other_returns(new.effects.as_ref()?)?;
    let mut names: Vec<u64> = binds
        .iter()
        .copied()
        .filter(|name| *name == own || methods.binary_search(name).is_err())
        .collect();
    for function in changed {
        let name = name_hash(function);
        if methods.binary_search(&name).is_err() || !defined_elsewhere(name) {
            names.push(name);
        }
    }
    Some(names)
}

/// Per top-level class, the methods it defines directly: `(method, statement, class)`, names by
/// [`name_hash`].
fn definers_of_methods(nodes: &[Node<'_>], source: &str) -> Vec<(u64, usize, u64)> {
    let mut definers = Vec::new();
    for (index, &node) in nodes.iter().enumerate() {
        if let Some(name) = defined_name(node, source) {
            for method in method_names(node, source) {
                definers.push((method, index, name));
            }
        }
    }
    definers
}

/// Whether `statement` mentions one of `names` outside a function body: anywhere unless it is
/// a function definition, else in its decorators, name and parameters.
fn mentioned_outside_function_body(statement: Node<'_>, source: &str, names: &KeySet) -> bool {
    let body = crate::syntax::undecorated(statement)
        .filter(|definition| definition.is(kind::FUNCTION_DEFINITION))
        .and_then(|function| function.field("body"));
    let outside = match body {
        Some(body) => &source[statement.start_byte()..body.start_byte()],
        None => &source[statement.byte_range()],
    };
    intersects(&identifiers(outside), names)
}

fn intersects(sorted: &[u64], set: &KeySet) -> bool {
    !set.is_empty() && sorted.iter().any(|hash| set.contains(hash))
}

/// Why `old` cannot be reused for `source`, if it cannot: the checks that do not depend on
/// which statements changed.
fn usable(
    old_source: &str,
    old: &IncrementalState,
    source: &str,
    root: Node<'_>,
    (settings_digest, running_digest, prepass): (u64, u64, &PrepassDigest),
    policy: ReusePolicy,
) -> Result<PrepassChanges, &'static str> {
    if old.settings != settings_digest {
        return Err("settings changed");
    }
    if old.running != running_digest {
        return Err("the rules that run changed (a rule's words appeared or went)");
    }
    if old.root_kind != root.kind_id() || root.is_error() {
        return Err("the module does not parse as a module");
    }
    if policy == ReusePolicy::UnsoundTextOnly {
        return Ok(PrepassChanges::default());
    }
    let changes = prepass.changes_since(&old.prepass)?;
    for &(question, needle) in &old.questions {
        let ask: fn(&str, &str) -> bool = match question {
            "source_mentions" => |text, needle| text.contains(needle),
            CONTAINS_WORD => contains_word,
            _ => return Err("a whole-file question this module cannot re-ask"),
        };
        if ask(old_source, needle) != ask(source, needle) {
            return Err("a whole-file answer changed");
        }
    }
    Ok(changes)
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
    previous: &[(&str, &IncrementalState)],
    policy: ReusePolicy,
) -> IncrementalCheck {
    let root = tree.root_node();
    let nodes: Vec<Node<'_>> = root.named_nodes().collect();
    let settings_digest = hash_one(settings);
    // The changed bytes against each previous text; the words of the text from the first
    // previous one's (only the changed bytes scanned again).
    let changes: Vec<(usize, usize, isize)> = previous
        .iter()
        .map(|(old_source, _)| changed_bytes(old_source, source))
        .collect();
    let tokens = match previous.first().zip(changes.first()) {
        Some(((old_source, old), &changed)) => old.tokens.edited(old_source, source, changed),
        None => TokenCounts::of(source),
    };
    let running = RunningRules::with_tokens(Some(&tokens.present()), settings, Prefilter::On);
    let running_digest = hash_one(running.flags());
    if !running.any() {
        // As `check_tree`: no rule can report, only syntax errors; nothing to reuse next time.
        return IncrementalCheck {
            diagnostics: finish_syntax(Vec::new(), source, tree),
            reuse: Reuse {
                statements: nodes.len(),
                checked: 0,
                walked: 0,
                summaries: 0,
                why: CheckedBecause::default(),
                full: Some("no rule runs on this text"),
            },
            state: IncrementalState {
                settings: settings_digest,
                running: running_digest,
                root_kind: root.kind_id(),
                has_error: root.has_error(),
                prepass: PrepassDigest::default(),
                questions: Vec::new(),
                statements: Vec::new(),
                summaries: Arc::default(),
                import_insertion: import_insertion(source, root),
                tokens,
            },
        };
    }
    let caches: Vec<&SummaryCache> = previous.iter().map(|(_, old)| &*old.summaries).collect();
    // `walks`: the named nodes of the statements the pre-pass walked (their parts not reused),
    // which the traversal replays instead of walking them again.
    let (mut semantic, summary_cache, walks) =
        new_model_reusing(source, tree, settings, &caches, &nodes);
    // Offsets in the pre-pass (where functions first save) are compared by statement text and
    // offset inside it.
    let starts: Vec<usize> = nodes.iter().map(Node::start_byte).collect();
    // Each statement's text hash, computed once: a class holding many functions is located
    // once per function, and hashing its whole text each time cost as much as a small check.
    let text_hashes: Vec<std::cell::OnceCell<u64>> = vec![std::cell::OnceCell::new(); nodes.len()];
    let text_hash = |index: usize| -> u64 {
        let hash = || hash_one((nodes[index].kind_id(), &source[nodes[index].byte_range()]));
        match text_hashes.get(index) {
            Some(memo) => *memo.get_or_init(hash),
            None => hash(),
        }
    };
    let locate = |offset: usize| -> (u64, usize) {
        let index = starts.partition_point(|&start| start <= offset);
        match index.checked_sub(1) {
            Some(index) if offset <= nodes[index].end_byte() => {
                (text_hash(index), offset - starts[index])
            }
            _ => (u64::MAX, offset),
        }
    };
    let prepass = semantic.prepass_digest(&locate);
    let new_insertion = import_insertion(source, root);
    let mut full = Some("no previous check");
    let mut plan: Option<Plan<'_>> = None;
    let mut prepass_changes = PrepassChanges::default();
    for (&(old_source, old), &changed) in previous.iter().zip(&changes) {
        let current = (settings_digest, running_digest, &prepass);
        let candidate = match usable(old_source, old, source, root, current, policy) {
            Ok(changes) => {
                let candidate = (
                    self::plan(old_source, old, source, &nodes, changed),
                    changes,
                );
                // A fix that adds an import puts it where the module's leading imports end:
                // when that moved other than with the text, reused fixes would be wrong.
                let moved = candidate
                    .0
                    .map_insertion(&old.import_insertion.range)
                    .is_none_or(|range| {
                        range != new_insertion.range
                            || old.import_insertion.content != new_insertion.content
                    });
                if moved && policy == ReusePolicy::Sound {
                    if plan.is_none() {
                        full = Some("where fixes add imports moved");
                    }
                    continue;
                }
                candidate
            }
            Err(reason) => {
                if plan.is_none() {
                    full = Some(reason);
                }
                continue;
            }
        };
        if plan
            .as_ref()
            .is_none_or(|best| candidate.0.dirty_statements() < best.dirty_statements())
        {
            (plan, prepass_changes) = (Some(candidate.0), candidate.1);
            full = None;
        }
    }
    let old_of = |index: usize| -> Option<&Statement> {
        let plan = plan.as_ref()?;
        Some(&plan.old.statements[plan.old_index(index)?])
    };
    // The one old statement the edit changed into one new statement (typing inside a
    // statement), when its identifiers were counted.
    let edited_pair = plan.as_ref().and_then(|plan| {
        let last_old = (plan.suffix as isize + plan.index_shift) as usize;
        let old = plan.old.statements.get(plan.prefix)?;
        (plan.suffix == plan.prefix + 1 && last_old == plan.prefix + 1).then_some((
            plan.prefix,
            old,
            plan.old_source,
        ))
    });
    // Text hashes and identifiers: carried for clean statements, computed for the others.
    // Under a plan, a changed statement's identifiers are counted and the counts kept, so that
    // the next edit of it counts only the words it changed.
    let mut mention_counts: Vec<Option<IdentifierCounts>> = vec![None; nodes.len()];
    let mut hashes: Vec<u64> = Vec::with_capacity(nodes.len());
    let mut mentions: Vec<Arc<[u64]>> = Vec::with_capacity(nodes.len());
    for index in 0..nodes.len() {
        if let Some(old) = old_of(index) {
            hashes.push(old.hash);
            mentions.push(old.mentions.clone());
            mention_counts[index] = old.mention_counts.clone();
            continue;
        }
        let text = &source[nodes[index].byte_range()];
        hashes.push(text_hash(index));
        if plan.is_none() {
            mentions.push(identifiers(text).into());
            continue;
        }
        let edited =
            edited_pair
                .filter(|&(at, _, _)| at == index)
                .and_then(|(_, old, old_source)| {
                    let counts = old.mention_counts.as_deref()?;
                    let old_text = old_source.get(old.range.clone())?;
                    edited_identifier_counts(counts, old_text, text)
                });
        let counts: IdentifierCounts = edited.unwrap_or_else(|| identifier_counts(text)).into();
        mentions.push(counts.iter().map(|&(hash, _)| hash).collect());
        mention_counts[index] = Some(counts);
    }
    // Statements that read a part of the pre-pass that changed: the one holding each changed
    // function or loop summary (its definition's or loop's rules read it, and so does the
    // guard frame of the definition: hot path, load time, once per run), and every statement
    // that mentions a function whose by-name part changed (a call of it asks that part). They
    // are checked again, and taint what they bind unless they did the same to the index.
    let mut reads_changed_summary = vec![false; nodes.len()];
    if plan.is_some() {
        for &start in &prepass_changes.local_starts {
            let index = starts.partition_point(|&statement| statement <= start);
            match index.checked_sub(1) {
                Some(index) if start < nodes[index].end_byte() => {
                    reads_changed_summary[index] = true;
                }
                // Not inside a top-level statement (none is): every statement may read it.
                _ => reads_changed_summary.fill(true),
            }
        }
        // A part gone from a statement (or changed in it): that statement as it is now, when it
        // is clean (a dirty one is checked anyway).
        if let Some(plan) = &plan {
            let olds = &plan.old.statements;
            for &start in &prepass_changes.old_local_starts {
                let old_index = olds
                    .partition_point(|statement| statement.range.start <= start)
                    .checked_sub(1)
                    .filter(|&old_index| start < olds[old_index].range.end);
                let Some(old_index) = old_index else {
                    reads_changed_summary.fill(true);
                    continue;
                };
                let new_index = if old_index < plan.prefix {
                    Some(old_index)
                } else {
                    usize::try_from(old_index as isize - plan.index_shift)
                        .ok()
                        .filter(|&new_index| new_index >= plan.suffix)
                };
                if let Some(new_index) = new_index.filter(|&index| index < nodes.len()) {
                    reads_changed_summary[new_index] = true;
                }
            }
        }
        for (index, mentioned) in mentions.iter().enumerate() {
            if intersects(mentioned, &prepass_changes.names) {
                reads_changed_summary[index] = true;
            }
        }
    }
    // Clean statements' diagnostics in new coordinates; `None` forces a check.
    let mut reusable: Vec<Option<Vec<Diagnostic>>> = (0..nodes.len())
        .map(|index| {
            if reads_changed_summary[index] {
                return None;
            }
            plan.as_ref()?.reused(old_of(index)?)
        })
        .collect();
    // Which statements can be reused (their diagnostics are taken from `reusable` as the walk
    // meets them).
    let can_reuse: Vec<bool> = reusable.iter().map(Option::is_some).collect();
    // When the edit changed one definition into one definition (typing in a function or a
    // class): its index, so that what it binds taints later statements only if what it did to
    // the index changed (see `finish_statement`).
    let single_definition = plan.as_ref().and_then(|plan| {
        let last_old = (plan.suffix as isize + plan.index_shift) as usize;
        let definition = |kind: &str| {
            matches!(
                kind,
                "function_definition" | "class_definition" | "decorated_definition"
            )
        };
        (policy == ReusePolicy::Sound
            && plan.suffix == plan.prefix + 1
            && last_old == plan.prefix + 1
            && definition(nodes[plan.prefix].kind_name())
            && crate::syntax::PYTHON
                .node_kind_for_id(plan.old.statements[plan.prefix].kind)
                .is_some_and(definition))
        .then_some(plan.prefix)
    });
    // Per top-level class, the methods it defines directly: `(method, statement, class)` by
    // name hash, computed when a changed class is first compared (see `changed_names`).
    let method_definers: std::cell::OnceCell<Vec<(u64, usize, u64)>> = std::cell::OnceCell::new();
    // Whether a class other than `class` (by name), defined in a clean top-level statement other
    // than `statement`, defines `method` directly too. `obj.method(...)` then never reads it
    // through `SemanticModel::only_method_named` (two classes define it, before the edit and
    // after), so a change of its return in `class` taints only the class's own name.
    let defined_elsewhere = |method: u64, statement: usize, class: u64| -> bool {
        let definers = method_definers.get_or_init(|| definers_of_methods(&nodes, source));
        let dirty = plan.as_ref().map_or(0..0, |plan| plan.prefix..plan.suffix);
        definers.iter().any(|&(defined, index, name)| {
            defined == method && index != statement && name != class && !dirty.contains(&index)
        })
    };
    // Whether classes of two names, in clean statements, define `method` directly: then
    // `only_method_named` answers nothing for it before the edit and after, whatever the
    // changed statements define, and a changed class's method of that name taints nothing.
    let defined_by_two_clean_classes = |method: u64| -> bool {
        let dirty = plan.as_ref().map_or(0..0, |plan| plan.prefix..plan.suffix);
        let mut clean_class = None;
        method_definers
            .get_or_init(|| definers_of_methods(&nodes, source))
            .iter()
            .filter(|&&(defined, index, _)| defined == method && !dirty.contains(&index))
            .any(|&(_, _, class)| *clean_class.get_or_insert(class) != class)
    };
    // What a changed statement taints of the names it binds: all but the methods no
    // `obj.method(...)` reads by name (see above).
    let taint_of = |binds: &[u64], methods: &[u64]| -> Vec<u64> {
        binds
            .iter()
            .copied()
            .filter(|name| {
                methods.binary_search(name).is_err() || !defined_by_two_clean_classes(*name)
            })
            .collect()
    };
    // Names the dirty statements bound before the edit: tainted from the first of them on (a
    // statement before it may be checked again for a changed summary, and reads none of them).
    let mut bound_before: Vec<u64> = Vec::new();
    if let Some(plan) = &plan {
        let first_old = plan.prefix;
        let last_old = (plan.suffix as isize + plan.index_shift) as usize;
        for (old_index, old) in plan.old.statements[first_old..last_old].iter().enumerate() {
            if single_definition != Some(first_old + old_index) {
                bound_before.extend(taint_of(&old.binds, &old.methods));
            }
        }
    }
    let mut tainted: KeySet = KeySet::default();
    // Statements the rules of `READS_OTHER_STATEMENTS` may report on differently after this
    // edit: `triggers` before the changed statements and after them, `triggers_after` after
    // them only (the rules that read earlier text), `triggers_after_outside_bodies` after them
    // and outside function bodies.
    let mut triggers: KeySet = KeySet::default();
    let mut triggers_after: KeySet = KeySet::default();
    let mut triggers_after_outside_bodies: KeySet = KeySet::default();
    if let Some(plan) = &plan {
        // A changed module-level `assert` or expression statement, before the edit or after.
        let last_old = (plan.suffix as isize + plan.index_shift) as usize;
        let block_siblings_changed = plan.old.statements[plan.prefix..last_old]
            .iter()
            .map(|old| old.kind)
            .chain(nodes[plan.prefix..plan.suffix].iter().map(Node::kind_id))
            .any(|kind_id| {
                crate::syntax::PYTHON
                    .node_kind_for_id(kind_id)
                    .is_none_or(|kind| matches!(kind, "assert_statement" | "expression_statement"))
            });
        for &(_, reads, names) in READS_OTHER_STATEMENTS {
            let set = match reads {
                OtherStatements::Earlier => &mut triggers_after,
                OtherStatements::EarlierOutsideFunctionBodies => &mut triggers_after_outside_bodies,
                OtherStatements::BlockAssertsAndCalls if !block_siblings_changed => continue,
                OtherStatements::BlockAssertsAndCalls | OtherStatements::File => &mut triggers,
            };
            for &trigger in names {
                set.insert(name_hash(trigger));
                // `from torch_xla.runtime import use_spmd as start_spmd`: the local name too.
                for record in semantic.imports().records() {
                    if record.qualified.rsplit('.').next() == Some(trigger)
                        || record.member.as_deref() == Some(trigger)
                    {
                        set.insert(name_hash(&record.local));
                    }
                }
            }
        }
    }
    let triggered_at = |index: usize| -> bool {
        intersects(&mentions[index], &triggers)
            || plan.as_ref().is_some_and(|plan| index >= plan.prefix)
                && (intersects(&mentions[index], &triggers_after)
                    || intersects(&mentions[index], &triggers_after_outside_bodies)
                        && mentioned_outside_function_body(
                            nodes[index],
                            source,
                            &triggers_after_outside_bodies,
                        ))
    };
    // The last statement at or after `from` that must be checked under `tainted`.
    let last_needed = |from: usize, tainted: &KeySet| -> Option<usize> {
        (from..nodes.len()).rev().find(|&index| {
            !can_reuse[index]
                || policy == ReusePolicy::Sound
                    && (intersects(&mentions[index], tainted) || triggered_at(index))
        })
    };

    let mut dispatcher = Dispatcher::new(source, tree, settings, &running);
    let mut module_diagnostics = Vec::new();
    let mut records: Vec<Statement> = Vec::with_capacity(nodes.len());
    let mut suppressions = Suppressions::default();
    // Whether the current statement may bind differently than before (changed, or it reads a
    // tainted name or a changed module scope): then what it binds is tainted. A statement
    // checked again only for a rule's sake (`READS_OTHER_STATEMENTS`, a moved fix) binds the
    // same.
    let mut propagates = false;
    let mut stop = nodes.len();
    let mut checked = 0usize;
    let mut summaries_checked = 0usize;
    let mut why = CheckedBecause::default();
    let mut binds_from = 0usize;
    let mut needed: Option<Option<usize>> = None;
    // The names bound since the current statement started, and whether they taint.
    let finish_statement = |records: &mut Vec<Statement>,
                            semantic: &crate::semantic::SemanticModel<'_>,
                            binds_from: usize,
                            propagates: bool,
                            tainted: &mut KeySet,
                            needed: &mut Option<Option<usize>>| {
        let Some(index) = records.len().checked_sub(1) else {
            return;
        };
        let node = nodes[index];
        // What its text binds follows from its text: a clean statement's is carried.
        let (text_binds, methods) = match old_of(index) {
            Some(old) => (old.text_binds.clone(), old.methods.clone()),
            None => match defined_name(node, source) {
                Some(name) => {
                    // `obj.step(...)` on an object of unknown kind reads the return of the one
                    // method named `step` in the file's classes
                    // (`SemanticModel::only_method_named`), without naming the class: a
                    // changed class taints its methods' names too.
                    let mut methods = method_names(node, source);
                    methods.sort_unstable();
                    methods.dedup();
                    let text_binds: Vec<u64> = std::iter::once(name)
                        .chain(methods.iter().copied())
                        .collect();
                    (text_binds.into(), methods.into())
                }
                None => (
                    assigned_names(&source[node.byte_range()]).into(),
                    Arc::default(),
                ),
            },
        };
        let mut binds: Vec<u64> = semantic.module_binds()[binds_from..].to_vec();
        binds.extend(text_binds.iter().copied());
        binds.sort_unstable();
        binds.dedup();
        if let Some(plan) = &plan
            && propagates
        {
            let before = tainted.len();
            // A changed definition that binds the same names and did the same to the index
            // (facts equal, their origins outside the edited lines and moved with the text)
            // reads the same to every later statement.
            // So does a clean statement checked again (for a changed summary it reads, or a
            // tainted name it mentions: its text is the same, so only what it did to the index
            // can differ).
            let clean = !(plan.prefix..plan.suffix).contains(&index);
            let comparable = single_definition == Some(index) || clean;
            // But a clean assignment that mentions a tainted name or reads a changed summary
            // binds what rules read through its value expression
            // (`tensor_values::last_assignment_value`: `lora_state =
            // get_peft_model_state_dict(unet)` is a device state dict when `unet` is a device
            // module), which its effects on the index do not record: what it binds is tainted.
            let read_through = clean
                && defined_name(node, source).is_none()
                && (intersects(&mentions[index], tainted) || reads_changed_summary[index]);
            // The one changed definition replaced the old statement at the same index.
            let old_index = if single_definition == Some(index) {
                Some(index)
            } else {
                plan.old_index(index)
            };
            let old = old_index.and_then(|old_index| plan.old.statements.get(old_index));
            let unchanged = comparable
                && !read_through
                && old.is_some_and(|old| {
                    old.binds == binds
                        && match (&old.effects, &records[index].effects) {
                            (Some(old_effects), Some(new_effects)) => old_effects
                                .mapped(&|range| plan.map_outside_edited_lines(range))
                                .is_some_and(|moved| moved == *new_effects),
                            _ => false,
                        }
                });
            if !unchanged {
                match comparable
                    .then(|| {
                        let own = defined_name(node, source)?;
                        changed_names(
                            old?,
                            &records[index],
                            (own, &binds, &methods),
                            plan,
                            &|method| defined_elsewhere(method, index, own),
                        )
                    })
                    .flatten()
                {
                    Some(names) => tainted.extend(names),
                    None => {
                        tainted.extend(taint_of(&binds, &methods));
                        if comparable && let Some(old) = old {
                            tainted.extend(taint_of(&old.binds, &old.methods));
                        }
                    }
                }
            }
            if tainted.len() != before {
                *needed = None;
            }
        }
        records[index].binds = binds;
        records[index].text_binds = text_binds;
        records[index].methods = methods;
    };
    // The module node, then each top-level statement: walked (rules running or not) or, when
    // reused, its recorded effects on the index replayed.
    let root_errors = usize::from(root.is_error());
    semantic.enter(root);
    if root_errors == 0 {
        dispatcher.run(&semantic, root, &mut module_diagnostics);
    }
    let mut walked = 0usize;
    for (index, &node) in nodes.iter().enumerate() {
        finish_statement(
            &mut records,
            &semantic,
            binds_from,
            propagates,
            &mut tainted,
            &mut needed,
        );
        binds_from = semantic.module_binds().len();
        if plan.as_ref().is_some_and(|plan| index == plan.prefix) {
            tainted.extend(bound_before.iter().copied());
            needed = None;
        }
        let root_guard = semantic.root_guard_digest();
        let old = old_of(index);
        let guard_changed =
            old.is_some_and(|old| old.root_guard != root_guard) && policy == ReusePolicy::Sound;
        let edited = plan
            .as_ref()
            .is_some_and(|plan| (plan.prefix..plan.suffix).contains(&index));
        propagates = match &plan {
            None => false,
            Some(_) if edited => true,
            Some(_) => {
                policy == ReusePolicy::Sound
                    && (guard_changed
                        || reads_changed_summary[index]
                        || intersects(&mentions[index], &tainted))
            }
        };
        let mut mode = match &plan {
            None => Mode::Check,
            Some(_) if edited || guard_changed => Mode::Check,
            Some(plan) if index < plan.prefix => {
                if propagates || policy == ReusePolicy::Sound && triggered_at(index) {
                    Mode::Check
                } else {
                    Mode::Reuse
                }
            }
            Some(_) => {
                let last = *needed.get_or_insert_with(|| last_needed(index, &tainted));
                if last.is_none_or(|last| last < index) {
                    stop = index;
                    break;
                }
                if propagates || policy == ReusePolicy::Sound && triggered_at(index) {
                    Mode::Check
                } else {
                    Mode::Reuse
                }
            }
        };
        if mode == Mode::Reuse && !can_reuse[index] {
            mode = Mode::Check;
        }
        if mode == Mode::Check {
            checked += 1;
            if reads_changed_summary[index] && !edited {
                summaries_checked += 1;
            }
            if plan.is_some() {
                let reason = if edited {
                    &mut why.edited
                } else if guard_changed {
                    &mut why.guard
                } else if reads_changed_summary[index] {
                    &mut why.summary
                } else if intersects(&mentions[index], &tainted) {
                    &mut why.tainted
                } else if triggered_at(index) {
                    &mut why.triggered
                } else {
                    &mut why.diagnostics_moved
                };
                *reason += 1;
            }
        }
        let mark = semantic.mark();
        // A reused statement does to the index what it did last time (it reads nothing that
        // changed: see the module docs), shifted like its diagnostics.
        let replayed = mode == Mode::Reuse
            && plan.as_ref().is_some_and(|plan| {
                old.and_then(|old| old.effects.as_ref())
                    .is_some_and(|effects| {
                        let map = |(start, end): (usize, usize)| {
                            plan.map(&(start..end))
                                .map(|range| (range.start, range.end))
                        };
                        semantic.replay(effects, &map)
                    })
            });
        let mut comments = Vec::new();
        let mut diagnostics = match mode {
            // Each statement is met once: its reused diagnostics move into its record.
            Mode::Reuse => reusable[index].take().unwrap_or_default(),
            Mode::Check => Vec::new(),
        };
        if replayed {
            if let (Some(plan), Some(old)) = (&plan, old) {
                for range in old.comments.iter().filter_map(|range| plan.map(range)) {
                    suppressions.add_comment_text(range.start, &source[range.clone()]);
                    comments.push(range);
                }
            }
        } else {
            walked += 1;
            let mut visit = |semantic: &_, node, kind, dispatchable| {
                if crate::syntax::kind_name_with_id(node, kind) == "comment" {
                    let text = crate::syntax::node_text(node, source);
                    if may_hold_directive(text) {
                        suppressions.add_comment_text(node.start_byte(), text);
                        comments.push(node.byte_range());
                    }
                }
                if dispatchable && mode == Mode::Check {
                    dispatcher.run_kind(semantic, node, kind, &mut diagnostics);
                }
            };
            // The statement the pre-pass walked (edited, or with a syntax error) is replayed
            // from its recorded nodes: the same visits, without a second walk of its subtree
            // (in a file that is mostly one class, that subtree is most of the file).
            match walks.of(index) {
                Some(steps) => replay_statement(steps, root_errors, &mut semantic, visit),
                None => {
                    walk_node(
                        node,
                        root_errors,
                        &mut semantic,
                        &mut |semantic, node, dispatchable| {
                            visit(semantic, node, node.kind_id(), dispatchable);
                            true
                        },
                    );
                }
            }
        }
        records.push(Statement {
            range: node.byte_range(),
            kind: node.kind_id(),
            has_error: node.has_error(),
            hash: hashes[index],
            root_guard,
            binds: Vec::new(),
            text_binds: Arc::default(),
            methods: Arc::default(),
            mentions: mentions[index].clone(),
            mention_counts: mention_counts[index].take(),
            diagnostics,
            comments,
            effects: semantic.effects_since(mark),
        });
    }
    if stop == nodes.len() {
        finish_statement(
            &mut records,
            &semantic,
            binds_from,
            propagates,
            &mut tainted,
            &mut needed,
        );
        semantic.leave(root);
    }
    // Statements after the walk stopped: the previous records, shifted.
    if let Some(plan) = &plan {
        for index in stop..nodes.len() {
            let Some(old) = old_of(index) else {
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
            let map = |(start, end): (usize, usize)| {
                plan.map(&(start..end))
                    .map(|range| (range.start, range.end))
            };
            records.push(Statement {
                range: nodes[index].byte_range(),
                diagnostics: reusable[index].take().unwrap_or_default(),
                comments,
                effects: old
                    .effects
                    .as_ref()
                    .and_then(|effects| effects.mapped(&map)),
                ..old.clone()
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
    IncrementalCheck {
        diagnostics,
        reuse: Reuse {
            statements: nodes.len(),
            checked,
            walked,
            summaries: summaries_checked,
            why,
            full,
        },
        state: IncrementalState {
            settings: settings_digest,
            running: running_digest,
            root_kind: root.kind_id(),
            has_error: root.has_error(),
            prepass,
            questions,
            statements: records,
            summaries: Arc::new(summary_cache),
            import_insertion: import_insertion(source, root),
            tokens,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{edited_identifier_counts, identifier_counts, identifiers};

    /// After any edit, the counts from the old text's counts and the text before and after are
    /// the counts of the new text, and their hashes its identifiers: words split, joined, grown
    /// or cut by the edit, at its edges, at the text's ends, words with leading digits, non-ASCII
    /// words.
    #[test]
    fn edited_identifier_counts_are_the_counts_of_the_new_text() {
        let pieces = [
            "self", "x", "x1", "9", "9x", "_", ".", " ", "\n", "é", "(", "#", "\"",
        ];
        let mut next = crate::test_random(0x51_7cc1_b727_220a_u64);
        let mut changed = 0;
        for _ in 0..4_000 {
            let old: String = (0..14).map(|_| pieces[next(pieces.len())]).collect();
            let inserted: String = (0..next(4)).map(|_| pieces[next(pieces.len())]).collect();
            let boundaries: Vec<usize> = (0..=old.len())
                .filter(|&at| old.is_char_boundary(at))
                .collect();
            let (mut a, mut b) = (
                boundaries[next(boundaries.len())],
                boundaries[next(boundaries.len())],
            );
            if a > b {
                (a, b) = (b, a);
            }
            let new = format!("{}{inserted}{}", &old[..a], &old[b..]);
            let before = identifier_counts(&old);
            let edited = edited_identifier_counts(&before, &old, &new).expect("old's counts");
            assert_eq!(edited, identifier_counts(&new), "{old:?} -> {new:?}");
            let hashes: Vec<u64> = edited.iter().map(|&(hash, _)| hash).collect();
            assert_eq!(hashes, identifiers(&new), "{old:?} -> {new:?}");
            changed += usize::from(before != edited);
        }
        assert!(changed > 1_000, "{changed} edits changed a count");
        // Counts that are not the old text's are refused, not trusted.
        assert_eq!(edited_identifier_counts(&[], "a b", "a c"), None);
    }

    /// Typing inside one method of a class: from the second keystroke on, the class's
    /// identifiers are counted from the previous counts (kept in its record), and they are the
    /// identifiers of its new text.
    #[test]
    fn an_edited_statement_keeps_its_identifier_counts() {
        let settings = crate::Settings::default();
        let mut text = String::from(
            "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        \
             return x\n\n    def step(self):\n        pass\n\ny = 1\n",
        );
        let tree = crate::syntax::parse(&text, None).expect("parses");
        let mut state = super::check_tree_incremental(&text, &tree, &settings, &[]).state;
        assert!(state.statements.iter().all(|s| s.mention_counts.is_none()));
        for typed in ["v", "va", "val", "val =", "val = 2"] {
            let at = text.find("pass").expect("marker");
            let new_text = format!("{}{typed}\n        {}", &text[..at], &text[at..]);
            let new_tree = crate::syntax::parse(&new_text, None).expect("parses");
            let check =
                super::check_tree_incremental(&new_text, &new_tree, &settings, &[(&text, &state)]);
            assert_eq!(check.reuse.full, None);
            let class = check
                .state
                .statements
                .iter()
                .find(|s| new_text[s.range.clone()].starts_with("class"))
                .expect("the class");
            let counts = class.mention_counts.as_deref().expect("kept");
            assert_eq!(counts, identifier_counts(&new_text[class.range.clone()]));
            assert_eq!(*class.mentions, identifiers(&new_text[class.range.clone()]));
            // The clean statements carry none.
            assert_eq!(
                check
                    .state
                    .statements
                    .iter()
                    .filter(|s| s.mention_counts.is_some())
                    .count(),
                1
            );
            (text, state) = (new_text, check.state);
        }
    }
    /// The block-wise comparisons count what a byte-by-byte one counts, for texts shorter and
    /// longer than a block and differences anywhere (the first, the last, a block's edge).
    #[test]
    fn common_prefix_and_suffix_count_as_byte_by_byte() {
        let naive_prefix = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let naive_suffix = |a: &[u8], b: &[u8]| {
            a.iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        };
        let mut next = crate::test_random(0x2545_f491_4f6c_dd1d_u64);
        for _ in 0..5_000 {
            let a: Vec<u8> = (0..next(300)).map(|_| b'a' + next(2) as u8).collect();
            let mut b = a.clone();
            match next(4) {
                0 if !b.is_empty() => {
                    let at = next(b.len());
                    b[at] ^= 1;
                }
                1 => b.insert(next(b.len() + 1), b'x'),
                2 if !b.is_empty() => {
                    b.remove(next(b.len()));
                }
                _ => b = (0..next(300)).map(|_| b'a' + next(2) as u8).collect(),
            }
            assert_eq!(super::common_prefix(&a, &b), naive_prefix(&a, &b));
            assert_eq!(super::common_suffix(&a, &b), naive_suffix(&a, &b));
        }
    }
}

//! Applying fixes: non-overlapping edits in one pass, iterated to a fixed point, never writing a
//! result with new syntax errors. Rules build their edits with [`edits`] and name modules
//! through the [`importer`].

pub mod edits;
pub mod importer;

use std::collections::BTreeMap;

use crate::checker::check_tree;
use crate::diagnostic::{Applicability, Diagnostic, Edit};
use crate::settings::Settings;
use crate::syntax;

/// Applies the fixes of `diagnostics` whose applicability is at least `threshold`.
/// Fixes that overlap an earlier one are skipped (the next iteration picks them up).
/// Returns the new text and the codes fixed, or `None` when nothing applied.
pub fn apply_fixes(
    source: &str,
    diagnostics: &[Diagnostic],
    threshold: Applicability,
) -> Option<(String, Vec<&'static str>)> {
    let mut fixes: Vec<(&'static str, &[Edit])> = diagnostics
        .iter()
        .filter_map(|d| {
            let fix = d.fix.as_ref()?;
            (fix.applicability >= threshold && fix.applicability != Applicability::DisplayOnly)
                .then_some((d.code, fix.edits.as_slice()))
        })
        .collect();
    // No edit sorts first, then by the first edit's range.
    crate::sort::sort_stably_by_key(&mut fixes, |(_, edits)| match edits.first() {
        None => (0, 0, 0, ""),
        Some(edit) => (1, edit.range.start, edit.range.end, ""),
    });
    let mut accepted: Vec<&Edit> = Vec::new();
    let mut codes = Vec::new();
    'fixes: for (code, edits) in fixes {
        let mut new_edits = Vec::with_capacity(edits.len());
        for edit in edits {
            let valid = edit.range.start <= edit.range.end
                && edit.range.end <= source.len()
                && source.is_char_boundary(edit.range.start)
                && source.is_char_boundary(edit.range.end);
            if !valid {
                continue 'fixes;
            }
            // Two fixes that add the same import share that edit instead of adding it twice.
            if accepted.contains(&edit) {
                continue;
            }
            if accepted.iter().any(|other| edits_conflict(edit, other)) {
                continue 'fixes;
            }
            new_edits.push(edit);
        }
        accepted.extend(new_edits);
        codes.push(code);
    }
    if accepted.is_empty() {
        return None;
    }
    crate::sort::sort_stably_by_key(&mut accepted, |e| (e.range.start, e.range.end, 0, ""));
    let mut output = String::with_capacity(source.len() + 64);
    let mut last = 0;
    for edit in accepted {
        output.push_str(&source[last..edit.range.start]);
        output.push_str(&edit.content);
        last = edit.range.end;
    }
    output.push_str(&source[last..]);
    Some((output, codes))
}

/// Overlapping ranges conflict, and so does an insertion strictly inside a replaced range, or
/// two different insertions at one offset (their order would be arbitrary).
fn edits_conflict(a: &Edit, b: &Edit) -> bool {
    let overlap = a.range.start < b.range.end && b.range.start < a.range.end;
    let same_insertion_point =
        a.range.is_empty() && b.range.is_empty() && a.range.start == b.range.start;
    overlap || same_insertion_point
}

/// The outcome of fixing one file.
#[derive(Debug, Clone)]
pub struct FixOutcome {
    /// The fixed text (equal to the input when nothing applied).
    pub output: String,
    /// How many fixes of each code were applied.
    pub fixed: BTreeMap<&'static str, usize>,
    /// Diagnostics that remain in `output`.
    pub remaining: Vec<Diagnostic>,
    /// Iterations run; fixes are re-applied until nothing changes.
    pub iterations: usize,
    /// Set when an iteration was discarded because its result had new syntax errors.
    pub rejected_syntax_error: bool,
    /// Set when fixing stopped at the iteration limit without converging.
    pub converged: bool,
}

/// Iterations after which fixing gives up (a convergence bug in a rule).
pub const MAX_FIX_ITERATIONS: usize = 50;

/// Fixes `source` to a fixed point with fixes of at least `threshold` applicability.
pub fn fix_source(source: &str, settings: &Settings, threshold: Applicability) -> FixOutcome {
    let mut current = source.to_string();
    let mut fixed: BTreeMap<&'static str, usize> = BTreeMap::new();
    let Some(mut tree) = syntax::parse(&current, None) else {
        return FixOutcome {
            output: current,
            fixed,
            remaining: Vec::new(),
            iterations: 0,
            rejected_syntax_error: false,
            converged: true,
        };
    };
    let baseline_errors = count_errors(&tree);
    let mut rejected_syntax_error = false;
    let mut converged = false;
    let mut iterations = 0;
    let mut diagnostics = check_tree(&current, &tree, settings);
    while iterations < MAX_FIX_ITERATIONS {
        iterations += 1;
        let Some((candidate, codes)) = apply_fixes(&current, &diagnostics, threshold) else {
            converged = true;
            break;
        };
        let Some(candidate_tree) = syntax::parse(&candidate, None) else {
            break;
        };
        if count_errors(&candidate_tree) > baseline_errors {
            rejected_syntax_error = true;
            converged = true;
            break;
        }
        for code in codes {
            *fixed.entry(code).or_default() += 1;
        }
        current = candidate;
        tree = candidate_tree;
        diagnostics = check_tree(&current, &tree, settings);
    }
    FixOutcome {
        output: current,
        fixed,
        remaining: diagnostics,
        iterations,
        rejected_syntax_error,
        converged,
    }
}

/// Number of ERROR and MISSING nodes in a tree (iterative walk).
pub fn count_errors(tree: &tree_sitter::Tree) -> usize {
    let root = tree.root_node();
    if !root.has_error() {
        return 0;
    }
    let mut count = 0;
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            count += 1;
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return count;
            }
        }
    }
}

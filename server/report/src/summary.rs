//! Closing lines of a check: the summary ("Found 12 diagnostics …", fix hints) and the
//! `--statistics` table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tpulint_analyzer::{Applicability, Severity};

use crate::location::SourceFile;

/// Counts over a set of checked files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Diagnostics with a safe fix (applied by `--fix`).
    pub safe_fixable: usize,
    /// Diagnostics with an unsafe fix (applied by `--fix --unsafe-fixes`).
    pub unsafe_fixable: usize,
}

impl Counts {
    pub fn of(files: &[SourceFile]) -> Counts {
        let mut counts = Counts::default();
        for diagnostic in files.iter().flat_map(|file| &file.diagnostics) {
            counts.total += 1;
            match diagnostic.severity {
                Severity::Error => counts.errors += 1,
                Severity::Warning => counts.warnings += 1,
                Severity::Info => counts.infos += 1,
            }
            match diagnostic.fix.as_ref().map(|fix| fix.applicability) {
                Some(Applicability::Safe) => counts.safe_fixable += 1,
                Some(Applicability::Unsafe) => counts.unsafe_fixable += 1,
                _ => {}
            }
        }
        counts
    }
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// The closing summary, ruff-style. `unsafe_fixes` says whether unsafe fixes are enabled (so
/// they count as fixable rather than as hidden).
pub fn render_summary(counts: &Counts, fixed: usize, unsafe_fixes: bool) -> String {
    let mut out = String::new();
    if counts.total == 0 {
        if fixed > 0 {
            let _ = writeln!(
                out,
                "Found {} ({} fixed, 0 remaining).",
                plural(fixed, "diagnostic"),
                fixed
            );
        } else {
            out.push_str("All checks passed!\n");
        }
        return out;
    }
    let mut parts = Vec::new();
    if counts.errors > 0 {
        parts.push(plural(counts.errors, "error"));
    }
    if counts.warnings > 0 {
        parts.push(plural(counts.warnings, "warning"));
    }
    if counts.infos > 0 {
        parts.push(format!("{} info", counts.infos));
    }
    if fixed > 0 {
        let _ = writeln!(
            out,
            "Found {} ({} fixed, {} remaining: {}).",
            plural(fixed + counts.total, "diagnostic"),
            fixed,
            counts.total,
            parts.join(", ")
        );
    } else {
        let _ = writeln!(
            out,
            "Found {} ({}).",
            plural(counts.total, "diagnostic"),
            parts.join(", ")
        );
    }
    let fixable = counts.safe_fixable
        + if unsafe_fixes {
            counts.unsafe_fixable
        } else {
            0
        };
    if fixable > 0 {
        let option = if unsafe_fixes {
            "`--fix --unsafe-fixes`"
        } else {
            "`--fix`"
        };
        let _ = writeln!(out, "[*] {fixable} fixable with {option}.");
    }
    if !unsafe_fixes && counts.unsafe_fixable > 0 {
        let _ = writeln!(
            out,
            "{} hidden {} can be enabled with `--unsafe-fixes`.",
            counts.unsafe_fixable,
            if counts.unsafe_fixable == 1 {
                "fix"
            } else {
                "fixes"
            }
        );
    }
    out
}

/// One row of the `--statistics` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatisticsRow {
    pub code: &'static str,
    pub name: &'static str,
    pub count: usize,
    pub fixable: bool,
}

/// Diagnostics counted per code, most frequent first (then by code).
pub fn statistics(files: &[SourceFile], unsafe_fixes: bool) -> Vec<StatisticsRow> {
    let mut by_code: BTreeMap<&'static str, StatisticsRow> = BTreeMap::new();
    for diagnostic in files.iter().flat_map(|file| &file.diagnostics) {
        let row = by_code.entry(diagnostic.code).or_insert(StatisticsRow {
            code: diagnostic.code,
            name: diagnostic.name,
            count: 0,
            fixable: false,
        });
        row.count += 1;
        row.fixable |= diagnostic.fix.as_ref().is_some_and(|fix| {
            fix.applicability == Applicability::Safe
                || (unsafe_fixes && fix.applicability == Applicability::Unsafe)
        });
    }
    let mut rows: Vec<StatisticsRow> = by_code.into_values().collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    rows
}

/// The statistics table as text: count, code, fixable marker, rule name.
pub fn render_statistics(rows: &[StatisticsRow]) -> String {
    let width = rows
        .iter()
        .map(|row| row.count.to_string().len())
        .max()
        .unwrap_or(1);
    let mut out = String::new();
    for row in rows {
        let marker = if row.fixable { "[*]" } else { "[ ]" };
        let _ = writeln!(
            out,
            "{:>width$}\t{}\t{} {}",
            row.count, row.code, marker, row.name
        );
    }
    out
}

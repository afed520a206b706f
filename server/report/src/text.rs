//! The `text` and `concise` formats, and unified diffs of fixes.

use std::fmt::Write as _;

use similar::TextDiff;
use tpulint_analyzer::{Applicability, Diagnostic, Fix};

use crate::location::SourceFile;

/// Options for the `text` format.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// Show each fix as a diff under its diagnostic (snapshots and `--show-fixes`).
    pub show_fix_diff: bool,
}

/// `path:row:col: CODE message` — one line per diagnostic.
pub fn render_concise(file: &SourceFile, diagnostic: &Diagnostic) -> String {
    let location = file.location(diagnostic.range.start);
    let fixable = match &diagnostic.fix {
        Some(fix) if fix.applicability == Applicability::Safe => " [*]",
        _ => "",
    };
    format!(
        "{}: {}{} {}",
        file.display_location(&location),
        diagnostic.code,
        fixable,
        diagnostic.message
    )
}

/// A ruff-style block: header, location, the source lines with carets, help and severity.
pub fn render_text(file: &SourceFile, diagnostic: &Diagnostic, options: TextOptions) -> String {
    let mut out = String::new();
    let start = file.location(diagnostic.range.start);
    let end = file.location(diagnostic.range.end);
    let fixable = match &diagnostic.fix {
        Some(fix) if fix.applicability == Applicability::Safe => " [*]",
        _ => "",
    };
    let _ = writeln!(
        out,
        "{}{} {} [{}]",
        diagnostic.code,
        fixable,
        diagnostic.message,
        diagnostic.severity.as_str()
    );
    let _ = writeln!(out, " --> {}", file.display_location(&start));
    // Rows shown are the cell's in a notebook; lines are fetched by their row in the module.
    let first_module_row = start.module_row - start.row;
    let (start_row, end_row) = (start.row, end.module_row - first_module_row);
    let last_row = end_row.max(start_row);
    // Long ranges show their first and last lines only.
    let rows: Vec<usize> = if last_row - start_row > 4 {
        vec![start_row, start_row + 1, 0, last_row]
    } else {
        (start_row..=last_row).collect()
    };
    let gutter = last_row.to_string().len();
    let _ = writeln!(out, "{:gutter$} |", "");
    for row in rows {
        if row == 0 {
            let _ = writeln!(out, "{:gutter$} | ...", "");
            continue;
        }
        let line = expand_tabs(file.line_text(first_module_row + row - 1));
        let _ = writeln!(out, "{row:>gutter$} | {line}");
        let caret_start = if row == start_row {
            start.column - 1
        } else {
            0
        };
        let caret_end = if row == end_row {
            end.column - 1
        } else {
            line.chars().count()
        };
        let raw_line = file.line_text(first_module_row + row - 1);
        let (caret_start, caret_end) = (
            display_width(raw_line, caret_start),
            display_width(raw_line, caret_end),
        );
        let width = caret_end.saturating_sub(caret_start).max(1);
        let _ = writeln!(
            out,
            "{:gutter$} | {}{}",
            "",
            " ".repeat(caret_start),
            "^".repeat(width)
        );
    }
    let _ = writeln!(out, "{:gutter$} |", "");
    for related in &diagnostic.related {
        let location = file.location(related.range.start);
        let _ = writeln!(
            out,
            "{:gutter$} = note: {} ({})",
            "",
            related.message,
            file.display_location(&location)
        );
    }
    if let Some(fix) = &diagnostic.fix {
        let suffix = match fix.applicability {
            Applicability::DisplayOnly => " (suggestion)",
            _ => "",
        };
        let _ = writeln!(out, "{:gutter$} = help: {}{}", "", fix.title, suffix);
        if options.show_fix_diff {
            let _ = writeln!(out);
            let _ = writeln!(out, "{} fix:", applicability_label(fix.applicability));
            out.push_str(&fix_diff(&file.text, fix));
        }
    }
    out
}

fn applicability_label(applicability: Applicability) -> &'static str {
    match applicability {
        Applicability::Safe => "Safe",
        Applicability::Unsafe => "Unsafe",
        Applicability::DisplayOnly => "Display-only",
    }
}

/// A unified diff (three lines of context) of `text` before and after applying `fix`.
pub fn fix_diff(text: &str, fix: &Fix) -> String {
    let mut fixed = String::with_capacity(text.len());
    let mut last = 0;
    for edit in &fix.edits {
        if edit.range.start < last || edit.range.end > text.len() {
            return String::from("(overlapping edits)\n");
        }
        fixed.push_str(&text[last..edit.range.start]);
        fixed.push_str(&edit.content);
        last = edit.range.end;
    }
    fixed.push_str(&text[last..]);
    unified_diff(text, &fixed, "before", "after")
}

/// A unified diff between two texts, with headers.
pub fn unified_diff(before: &str, after: &str, old_name: &str, new_name: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(2)
        .header(old_name, new_name)
        .to_string()
}

fn expand_tabs(line: &str) -> String {
    line.replace('\t', "    ")
}

/// Display width of the first `chars` characters of `line` (tabs count four).
fn display_width(line: &str, chars: usize) -> usize {
    line.chars()
        .take(chars)
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

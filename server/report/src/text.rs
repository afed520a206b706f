//! The `text` and `concise` formats (optionally with ANSI colours, as ruff colours a terminal),
//! and unified diffs of fixes.

use std::fmt::Write as _;

use similar::TextDiff;
use tpulint_analyzer::{Applicability, Diagnostic, Fix, rule_by_code_or_name};

use crate::location::SourceFile;

/// Options for the `text` format.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// Show each fix as a diff under its diagnostic (snapshots and `--show-fixes`).
    pub show_fix_diff: bool,
    /// Colour codes, paths, gutters and carets with ANSI escapes.
    pub color: bool,
}

/// ANSI styling that is a no-op when colour is off.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

const BOLD: &str = "1";
const RED_BOLD: &str = "1;31";
const YELLOW_BOLD: &str = "1;33";
const CYAN: &str = "36";
const BLUE_BOLD: &str = "1;34";

impl Paint {
    fn paint(self, style: &str, text: &str) -> String {
        if self.0 && !text.is_empty() {
            format!("\x1b[{style}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn severity(self, severity: tpulint_analyzer::Severity) -> String {
        let style = match severity {
            tpulint_analyzer::Severity::Error => RED_BOLD,
            tpulint_analyzer::Severity::Warning => YELLOW_BOLD,
            tpulint_analyzer::Severity::Info => CYAN,
        };
        self.paint(style, severity.as_str())
    }
}

/// `path:row:col: CODE message` — one line per diagnostic.
pub fn render_concise(file: &SourceFile, diagnostic: &Diagnostic) -> String {
    render_concise_with(file, diagnostic, TextOptions::default())
}

/// [`render_concise`], coloured when `options.color`.
pub fn render_concise_with(
    file: &SourceFile,
    diagnostic: &Diagnostic,
    options: TextOptions,
) -> String {
    let paint = Paint(options.color);
    let location = file.location(diagnostic.range.start);
    format!(
        "{}{}: {}{} {}",
        paint.paint(BOLD, &file.name),
        &file.display_location(&location)[file.name.len()..],
        paint.paint(RED_BOLD, &label(diagnostic)),
        fixable_marker(diagnostic, paint),
        diagnostic.message
    )
}

/// ` [*]` after the code of a diagnostic `--fix` resolves.
fn fixable_marker(diagnostic: &Diagnostic, paint: Paint) -> String {
    match &diagnostic.fix {
        Some(fix) if fix.applicability == Applicability::Safe => {
            format!(" {}", paint.paint(CYAN, "[*]"))
        }
        _ => String::new(),
    }
}

/// The code that heads a diagnostic: `TPU101` (or a runtime `TPR101`), or `invalid-syntax:` /
/// `io-error:` for the diagnostics no rule reports, whose "code" is a name (as ruff prints its
/// `invalid-syntax`).
fn label(diagnostic: &Diagnostic) -> String {
    if rule_by_code_or_name(diagnostic.code).is_some() || !diagnostic.code.contains('-') {
        diagnostic.code.to_string()
    } else {
        format!("{}:", diagnostic.code)
    }
}

/// A ruff-style block: header, location, the source lines with carets, help and severity.
pub fn render_text(file: &SourceFile, diagnostic: &Diagnostic, options: TextOptions) -> String {
    let mut out = String::new();
    let paint = Paint(options.color);
    let start = file.location(diagnostic.range.start);
    let end = file.location(diagnostic.range.end);
    let _ = writeln!(
        out,
        "{}{} {} [{}]",
        paint.paint(RED_BOLD, &label(diagnostic)),
        fixable_marker(diagnostic, paint),
        diagnostic.message,
        paint.severity(diagnostic.severity)
    );
    let _ = writeln!(
        out,
        " {} {}{}",
        paint.paint(BLUE_BOLD, "-->"),
        paint.paint(BOLD, &file.name),
        &file.display_location(&start)[file.name.len()..]
    );
    let bar = paint.paint(BLUE_BOLD, "|");
    if file.text.is_empty() {
        // Nothing to excerpt (a file that could not be read).
        return out;
    }
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
    let _ = writeln!(out, "{:gutter$} {bar}", "");
    for row in rows {
        if row == 0 {
            let _ = writeln!(out, "{:gutter$} {bar} ...", "");
            continue;
        }
        let line = expand_tabs(file.line_text(first_module_row + row - 1));
        let number = paint.paint(BLUE_BOLD, &format!("{row:>gutter$}"));
        let _ = writeln!(out, "{number} {bar} {line}");
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
            "{:gutter$} {bar} {}{}",
            "",
            " ".repeat(caret_start),
            paint.paint(RED_BOLD, &"^".repeat(width))
        );
    }
    let _ = writeln!(out, "{:gutter$} {bar}", "");
    for related in &diagnostic.related {
        let location = file.location(related.range.start);
        let _ = writeln!(
            out,
            "{:gutter$} {} {} ({})",
            "",
            paint.paint(BLUE_BOLD, "= note:"),
            related.message,
            file.display_location(&location)
        );
    }
    if let Some(fix) = &diagnostic.fix {
        let suffix = match fix.applicability {
            Applicability::DisplayOnly => " (suggestion)",
            _ => "",
        };
        let _ = writeln!(
            out,
            "{:gutter$} {} {}{}",
            "",
            paint.paint(CYAN, "= help:"),
            fix.title,
            suffix
        );
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

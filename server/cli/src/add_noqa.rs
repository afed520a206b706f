//! `tpulint check --add-noqa`: adopting tpulint on legacy code by suppressing every current
//! finding in place. Each line with a diagnostic gets `  # noqa: CODE, …` (merged into an
//! existing `# noqa: …` list; a bare `# noqa` already covers it). A diagnostic whose first line
//! ends inside a multi-line string or with a backslash continuation gets the comment on its
//! last line instead, where suppressions are also read. Syntax and I/O errors are never
//! suppressed, nor is TPU901 (an unused suppression). A result that would parse worse than the
//! original is not written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;
use tpulint_analyzer::suppression::{UNUSED_NOQA_CODE, find_noqa};
use tpulint_analyzer::{Diagnostic, Edit, LineIndex, apply_fixes, rule_by_code_or_name};
use tpulint_workspace::discovery::describe_io;
use tpulint_workspace::{Discovery, read_source, write_source};
use tree_sitter::Tree;

use crate::check::{check_text, display_name, parse, plural};
use crate::output::{self, ExitStatus};

/// What happened to one file.
enum Outcome {
    Added(usize),
    Unchanged,
    Failed(String),
}

pub fn run(discovery: &Discovery, working_directory: &Path) -> ExitStatus {
    let outcomes: Vec<(String, Outcome)> = discovery
        .files
        .par_iter()
        .map(|file| {
            let name = display_name(&file.path, working_directory);
            let settings = file.project.settings_for(&file.path);
            let outcome = add_to_file(&file.path, &name, &settings);
            (name, outcome)
        })
        .collect();
    let mut failed = !discovery.path_errors.is_empty();
    for error in &discovery.path_errors {
        output::error(&error.to_string());
    }
    let mut added = 0;
    for (name, outcome) in outcomes {
        match outcome {
            Outcome::Added(count) => added += count,
            Outcome::Unchanged => {}
            Outcome::Failed(message) => {
                output::error(&format!("{name}: {message}"));
                failed = true;
            }
        }
    }
    output::stderr(&format!("Added {}.\n", plural(added, "noqa directive")));
    if failed {
        ExitStatus::Error
    } else {
        ExitStatus::Success
    }
}

fn add_to_file(path: &Path, name: &str, settings: &tpulint_analyzer::Settings) -> Outcome {
    let source = match read_source(path) {
        Ok(source) => source,
        Err(error) => return Outcome::Failed(format!("cannot read: {}", describe_io(&error))),
    };
    if source.lossy {
        output::warning(&format!(
            "{name}: not valid UTF-8; no noqa directives added"
        ));
        return Outcome::Unchanged;
    }
    let text = &source.text;
    let Some(tree) = parse(text) else {
        return Outcome::Unchanged;
    };
    let diagnostics = check_text(text, settings);
    let (edits, count, skipped) = noqa_edits(text, &tree, &diagnostics);
    let index = LineIndex::new(text);
    for offset in skipped {
        output::warning(&format!(
            "{name}:{}: no noqa directive added: the line ends inside a string or continues with `\\`",
            index.line_of(offset) + 1
        ));
    }
    if edits.is_empty() {
        return Outcome::Unchanged;
    }
    let Some(new_text) = apply_edits(text, edits) else {
        return Outcome::Unchanged;
    };
    let worse = |t: &str| {
        parse(t).map_or(usize::MAX, |tree| {
            tpulint_analyzer::fix::count_errors(&tree)
        })
    };
    if worse(&new_text) > worse(text) {
        return Outcome::Failed(
            "adding noqa directives would break the syntax; left unchanged".into(),
        );
    }
    match write_source(path, &source, &new_text) {
        Ok(()) => Outcome::Added(count),
        Err(error) => Outcome::Failed(format!("cannot write: {}", describe_io(&error))),
    }
}

/// Applies non-overlapping edits (one per line) through the engine's edit applier.
fn apply_edits(text: &str, edits: Vec<Edit>) -> Option<String> {
    let diagnostic = Diagnostic {
        code: "noqa",
        name: "noqa",
        message: String::new(),
        range: 0..0,
        severity: tpulint_analyzer::Severity::Info,
        fix: Some(tpulint_analyzer::Fix::safe("Add noqa", edits)),
        related: Vec::new(),
        tag: None,
    };
    apply_fixes(text, &[diagnostic], tpulint_analyzer::Applicability::Safe).map(|(text, _)| text)
}

/// The edits that suppress `diagnostics`, how many lines they touch, and the start offsets of
/// the diagnostics no comment can follow.
fn noqa_edits(
    text: &str,
    tree: &Tree,
    diagnostics: &[Diagnostic],
) -> (Vec<Edit>, usize, Vec<usize>) {
    let index = LineIndex::new(text);
    let mut codes_by_line: BTreeMap<usize, BTreeSet<&'static str>> = BTreeMap::new();
    let mut skipped = Vec::new();
    for diagnostic in diagnostics {
        if rule_by_code_or_name(diagnostic.code).is_none() || diagnostic.code == UNUSED_NOQA_CODE {
            continue;
        }
        let first = index.line_of(diagnostic.range.start);
        let last = index.line_of(diagnostic.range.end.max(diagnostic.range.start));
        let Some(line) = [first, last]
            .into_iter()
            .find(|line| can_end_with_comment(text, &index, tree, *line))
        else {
            skipped.push(diagnostic.range.start);
            continue;
        };
        codes_by_line
            .entry(line)
            .or_default()
            .insert(diagnostic.code);
    }
    let mut edits = Vec::new();
    for (line, codes) in codes_by_line {
        if let Some(edit) = line_edit(text, &index, tree, line, &codes) {
            edits.push(edit);
        }
    }
    let count = edits.len();
    (edits, count, skipped)
}

/// Where the line's code ends (trailing whitespace and line break excluded).
fn content_end(text: &str, index: &LineIndex, line: usize) -> usize {
    let range = index.line_range(line, text);
    range.start + text[range.clone()].trim_end().len()
}

/// Whether a comment may follow the line: it does not end inside a string or with `\`.
fn can_end_with_comment(text: &str, index: &LineIndex, tree: &Tree, line: usize) -> bool {
    let range = index.line_range(line, text);
    let end = content_end(text, index, line);
    if end == range.start || text[..end].ends_with('\\') {
        return false;
    }
    let Some(mut node) = tree.root_node().descendant_for_byte_range(end - 1, end) else {
        return false;
    };
    loop {
        if node.kind() == "comment" {
            return true;
        }
        if matches!(
            node.kind(),
            "string" | "string_content" | "concatenated_string"
        ) && node.end_byte() > end
        {
            return false;
        }
        match node.parent() {
            Some(parent) => node = parent,
            None => return true,
        }
    }
}

/// The edit adding `codes` to `line`'s noqa directive (or a new one).
fn line_edit(
    text: &str,
    index: &LineIndex,
    tree: &Tree,
    line: usize,
    codes: &BTreeSet<&'static str>,
) -> Option<Edit> {
    let end = content_end(text, index, line);
    if let Some(comment) = tree
        .root_node()
        .descendant_for_byte_range(end - 1, end)
        .filter(|node| node.kind() == "comment")
    {
        let comment_text = &text[comment.byte_range()];
        if let Some(directive) = find_noqa(comment_text) {
            let listed = directive.codes?;
            let missing: Vec<&str> = codes
                .iter()
                .copied()
                .filter(|code| {
                    !listed
                        .iter()
                        .any(|(existing, _)| existing.eq_ignore_ascii_case(code))
                })
                .collect();
            if missing.is_empty() {
                return None;
            }
            return Some(Edit::insert(
                comment.start_byte() + directive.range.end,
                format!(", {}", missing.join(", ")),
            ));
        }
    }
    let codes: Vec<&str> = codes.iter().copied().collect();
    Some(Edit::insert(end, format!("  # noqa: {}", codes.join(", "))))
}

//! The fix loop for every source kind: check, apply the non-overlapping fixes at or above the
//! threshold, re-check, until nothing applies; an iteration that adds syntax errors is
//! discarded. A notebook is checked as one module, but each fix applies to its own cell only,
//! and only when it stays inside that cell and off IPython lines.

use std::collections::BTreeMap;

use tpulint_analyzer::fix::{MAX_FIX_ITERATIONS, count_errors};
use tpulint_analyzer::{Applicability, Diagnostic, Settings, apply_fixes, check_tree, syntax};

use crate::notebook::concatenate;
use crate::source_kind::SourceKind;

/// What fixing one source produced.
#[derive(Debug, Clone)]
pub struct FixedSource {
    /// The fixed source (equal to the input when nothing applied).
    pub output: SourceKind,
    /// How many fixes of each code were applied.
    pub fixed: BTreeMap<&'static str, usize>,
    /// The diagnostics that remain, in the offsets of `output.module()`.
    pub remaining: Vec<Diagnostic>,
    pub iterations: usize,
    /// Set when an iteration was discarded because its result had new syntax errors.
    pub rejected_syntax_error: bool,
    /// Unset when fixing stopped at the iteration limit.
    pub converged: bool,
}

/// The text being fixed: a module's, or each cell's (`None` for cells not checked).
#[derive(Clone)]
enum Current {
    Python(String),
    Cells(Vec<Option<String>>),
}

impl Current {
    fn checked_text(&self) -> String {
        match self {
            Current::Python(text) => text.clone(),
            Current::Cells(cells) => concatenate(cells.iter().map(Option::as_deref)).text,
        }
    }

    /// Applies the fixes of `diagnostics` (of [`Self::checked_text`]); with `only_cell`, only
    /// those in that cell.
    fn apply(
        &self,
        diagnostics: &[Diagnostic],
        threshold: Applicability,
        only_cell: Option<usize>,
    ) -> Option<(Current, Vec<&'static str>)> {
        match self {
            Current::Python(text) => apply_fixes(text, diagnostics, threshold)
                .map(|(output, codes)| (Current::Python(output), codes)),
            Current::Cells(cells) => {
                let concatenation = concatenate(cells.iter().map(Option::as_deref));
                let mut per_span: Vec<Vec<Diagnostic>> =
                    vec![Vec::new(); concatenation.spans.len()];
                for diagnostic in diagnostics {
                    if let Some((span, mapped)) = concatenation.map_diagnostic(diagnostic)
                        && mapped.fix.is_some()
                        && only_cell.is_none_or(|cell| concatenation.spans[span].cell == cell)
                    {
                        per_span[span].push(mapped);
                    }
                }
                let mut next = cells.clone();
                let mut all_codes = Vec::new();
                for (span, cell_diagnostics) in concatenation.spans.iter().zip(per_span) {
                    let Some(text) = cells[span.cell].as_deref() else {
                        continue;
                    };
                    if let Some((output, codes)) = apply_fixes(text, &cell_diagnostics, threshold) {
                        next[span.cell] = Some(output);
                        all_codes.extend(codes);
                    }
                }
                (!all_codes.is_empty()).then_some((Current::Cells(next), all_codes))
            }
        }
    }
}

/// Fixes `source` to a fixed point with fixes of at least `threshold` applicability.
pub fn fix(source: &SourceKind, settings: &Settings, threshold: Applicability) -> FixedSource {
    fix_cells_of(source, settings, threshold, None)
}

/// [`fix`], applying only the fixes in cell `only_cell` of a notebook (`None`: every cell).
pub fn fix_cells_of(
    source: &SourceKind,
    settings: &Settings,
    threshold: Applicability,
    only_cell: Option<usize>,
) -> FixedSource {
    let start = match source {
        SourceKind::Python(text) => Current::Python(text.clone()),
        SourceKind::Notebook(notebook) => Current::Cells(
            notebook
                .checked_sources()
                .map(|cell| cell.map(str::to_string))
                .collect(),
        ),
    };
    let (current, run) = fix_loop(start, settings, threshold, only_cell);
    let output = match (source, current) {
        (SourceKind::Notebook(notebook), Current::Cells(cells)) => {
            let changes: Vec<(usize, String)> = cells
                .into_iter()
                .enumerate()
                .filter_map(|(index, cell)| Some((index, cell?)))
                .collect();
            SourceKind::Notebook(notebook.with_sources(&changes))
        }
        (_, Current::Python(text)) => SourceKind::Python(text),
        (SourceKind::Python(_), Current::Cells(_)) => source.clone(),
    };
    let remaining = output.module().confine(run.diagnostics);
    FixedSource {
        output,
        fixed: run.fixed,
        remaining,
        iterations: run.iterations,
        rejected_syntax_error: run.rejected_syntax_error,
        converged: run.converged,
    }
}

/// The fix loop over one Python text, as an editor holds an open document: the fixed text.
/// (Unlike [`fix`], it leaves the notebook model out of the WebAssembly module.)
pub fn fix_text(text: &str, settings: &Settings, threshold: Applicability) -> String {
    match fix_loop(Current::Python(text.to_string()), settings, threshold, None).0 {
        Current::Python(text) => text,
        Current::Cells(_) => text.to_string(),
    }
}

/// The fix loop over cell texts (`None` for cells not checked), as an editor holds an open
/// notebook: returns each cell's fixed text.
pub fn fix_cells(
    cells: Vec<Option<String>>,
    settings: &Settings,
    threshold: Applicability,
    only_cell: Option<usize>,
) -> Vec<Option<String>> {
    match fix_loop(Current::Cells(cells), settings, threshold, only_cell).0 {
        Current::Cells(cells) => cells,
        Current::Python(_) => Vec::new(),
    }
}

struct LoopRun {
    fixed: BTreeMap<&'static str, usize>,
    /// The diagnostics of the final text's checked module.
    diagnostics: Vec<Diagnostic>,
    iterations: usize,
    rejected_syntax_error: bool,
    converged: bool,
}

fn fix_loop(
    mut current: Current,
    settings: &Settings,
    threshold: Applicability,
    only_cell: Option<usize>,
) -> (Current, LoopRun) {
    let mut run = LoopRun {
        fixed: BTreeMap::new(),
        diagnostics: Vec::new(),
        iterations: 0,
        rejected_syntax_error: false,
        converged: false,
    };
    let mut text = current.checked_text();
    let Some(tree) = syntax::parse(&text, None) else {
        run.converged = true;
        return (current, run);
    };
    let baseline_errors = count_errors(&tree);
    run.diagnostics = check_tree(&text, &tree, settings);
    while run.iterations < MAX_FIX_ITERATIONS {
        run.iterations += 1;
        let Some((candidate, codes)) = current.apply(&run.diagnostics, threshold, only_cell) else {
            run.converged = true;
            break;
        };
        let candidate_text = candidate.checked_text();
        let Some(candidate_tree) = syntax::parse(&candidate_text, None) else {
            break;
        };
        if count_errors(&candidate_tree) > baseline_errors {
            run.rejected_syntax_error = true;
            run.converged = true;
            break;
        }
        for code in codes {
            *run.fixed.entry(code).or_default() += 1;
        }
        current = candidate;
        text = candidate_text;
        run.diagnostics = check_tree(&text, &candidate_tree, settings);
    }
    (current, run)
}

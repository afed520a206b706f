//! `tpulint check` on Jupyter notebooks (`.ipynb`): each is checked as one module of its code
//! cells (`tpulint_ide::SourceKind::Notebook`), reported with rows inside cells
//! (`path:cell N:row:col`, JSON `cell`), and fixed by rewriting only the `source` of the code
//! cells that change, so outputs, metadata, cell ids and the file's JSON layout are kept.

use std::collections::BTreeMap;
use std::path::Path;

use tpulint_analyzer::Settings;
use tpulint_ide::{Notebook, SourceKind};
use tpulint_report::SourceFile;
use tpulint_report::text::unified_diff;
use tpulint_workspace::SourceText;
use tpulint_workspace::discovery::describe_io;

use crate::check::{FileResult, Mode, RunOptions, backendless_device_fixes, io_error_diagnostic};

/// Checks (and fixes, per `options`) one notebook's JSON; `write` persists the fixed JSON.
pub(crate) fn check_notebook_text(
    name: &str,
    source: &SourceText,
    settings: &Settings,
    options: &RunOptions,
    write: impl FnOnce(&str) -> std::io::Result<()>,
) -> FileResult {
    // An unreadable notebook is an `io-error` diagnostic, like any file that cannot be read.
    let failed = |message: String| FileResult::io_error(name, Path::new(name), message);
    if source.lossy {
        return failed("not a valid notebook: not valid UTF-8".to_string());
    }
    let notebook = match Notebook::from_json(&source.text) {
        Ok(notebook) => notebook,
        Err(error) => return failed(error.to_string()),
    };
    let mut warnings = Vec::new();
    if !notebook.is_python() {
        warnings.push(format!(
            "{name}: the notebook's kernel language is not Python; its cells were not checked"
        ));
    }
    let kind = SourceKind::Notebook(notebook);
    if options.mode == Mode::Check {
        let module = kind.module();
        let diagnostics = module.check(settings);
        let backendless_device_fixes = backendless_device_fixes(&diagnostics, settings);
        return FileResult {
            file: notebook_file(name, &kind, &module, diagnostics),
            fixed: BTreeMap::new(),
            diff: None,
            warnings,
            io_failed: false,
            backendless_device_fixes,
        };
    }
    let outcome = tpulint_ide::fix(&kind, settings, options.threshold);
    if outcome.rejected_syntax_error {
        warnings.push(format!(
            "{name}: a fix would have introduced a syntax error; that fix was not applied"
        ));
    }
    if !outcome.converged {
        warnings.push(format!(
            "{name}: fixes did not converge after {} iterations; the last consistent result was kept",
            outcome.iterations
        ));
    }
    let (SourceKind::Notebook(before), SourceKind::Notebook(after)) = (&kind, &outcome.output)
    else {
        return failed("internal error: a notebook fixed into a module".to_string());
    };
    let changed = after.json() != before.json();
    let mut fixed = outcome.fixed;
    let mut diff = None;
    if changed {
        match options.mode {
            Mode::Diff => diff = Some(cell_diffs(name, before, after)),
            Mode::Fix => {
                if let Err(io_error) = write(after.json()) {
                    fixed.clear();
                    let module = kind.module();
                    let mut diagnostics = module.check(settings);
                    let backendless_device_fixes = backendless_device_fixes(&diagnostics, settings);
                    diagnostics.insert(
                        0,
                        io_error_diagnostic(format!(
                            "Cannot write fixes: {}",
                            describe_io(&io_error)
                        )),
                    );
                    return FileResult {
                        file: notebook_file(name, &kind, &module, diagnostics),
                        fixed,
                        diff: None,
                        warnings,
                        io_failed: true,
                        backendless_device_fixes,
                    };
                }
            }
            Mode::Check => {}
        }
    }
    // `--diff` reports what would change; the file itself is untouched.
    let (shown_kind, diagnostics) = match options.mode {
        Mode::Diff => (&kind, Vec::new()),
        _ => (&outcome.output, outcome.remaining),
    };
    let shown = shown_kind.module();
    let backendless_device_fixes = backendless_device_fixes(&diagnostics, settings);
    FileResult {
        file: notebook_file(name, shown_kind, &shown, diagnostics),
        fixed,
        diff,
        warnings,
        io_failed: false,
        backendless_device_fixes,
    }
}

/// The report's view of a notebook: rows inside cells, and the JSON line of each finding for
/// the formats that point into the file on disk (GitHub, GitLab, SARIF).
fn notebook_file(
    name: &str,
    kind: &SourceKind,
    module: &tpulint_ide::Module,
    diagnostics: Vec<tpulint_analyzer::Diagnostic>,
) -> SourceFile {
    let file =
        SourceFile::new(name, module.text.clone(), diagnostics).with_cells(&module.cell_starts());
    match (kind, &module.cells) {
        (SourceKind::Notebook(notebook), Some(concatenation)) => {
            file.with_file_text(notebook.json(), notebook.file_offsets(concatenation))
        }
        _ => file,
    }
}

/// One unified diff per changed cell, headed `a/path:cell N` as ruff prints them.
fn cell_diffs(name: &str, before: &Notebook, after: &Notebook) -> String {
    let mut out = String::new();
    for (index, (old, new)) in before.cells().iter().zip(after.cells()).enumerate() {
        if old.source != new.source {
            let cell = format!("{name}:cell {}", index + 1);
            out.push_str(&unified_diff(
                &old.source,
                &new.source,
                &format!("a/{cell}"),
                &format!("b/{cell}"),
            ));
        }
    }
    out
}

/// Whether `path` (a file given, or `--stdin-filename`) is a notebook.
pub(crate) fn is_notebook(path: &Path) -> bool {
    tpulint_workspace::is_notebook_file(path)
}

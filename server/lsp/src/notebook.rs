//! Notebook documents (`notebookDocument/*`): Jupyter notebooks whose Python code cells are
//! checked together as one module, with results mapped back to each cell's own URI.
//!
//! Model (the design ruff's server uses too): the server keeps each open notebook as an ordered
//! list of cells plus one text document per cell, indexed by cell URI. Analysis concatenates the
//! Python code cells in notebook order, so an `import torch_xla` in the first cell sets the
//! backend for the last one, and facts such as "`x` lives on CUDA" flow across cells. IPython
//! syntax (`%magic`, `!shell`, `obj?`, `%%cell` magics) is neutralised with same-length
//! whitespace, so byte offsets inside a cell are the same in the concatenation and in the cell.
//!
//! Cross-cell results: a diagnostic is reported in the cell where it starts, its range clipped to
//! that cell; related locations in other cells are dropped; a fix is kept only when every edit
//! lies inside the diagnostic's own cell and outside neutralised IPython lines (anything else
//! could corrupt a cell boundary or a magic). "Fix all" follows the same rule, per cell.
//!
//! Ordering rule (as for text documents): notebook changes are applied synchronously under the
//! notebooks lock before any `.await`; analyses run on snapshots and are stored, and published,
//! only if the notebook's version and the settings generation are still the ones they were
//! computed for. Publishes are queued on the session's publish queue while the lock is held.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard};

use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{
    self as lsp, CodeActionKind, CodeActionOrCommand, DidChangeNotebookDocumentParams,
    DidCloseNotebookDocumentParams, DidOpenNotebookDocumentParams, MessageType, Notebook,
    NotebookCellKind, NotebookCellSelector, NotebookDocumentSyncOptions, NotebookSelector,
    TextDocumentItem, TextEdit, Uri, WorkspaceEdit,
};
use tpulint_analyzer::fix::{MAX_FIX_ITERATIONS, count_errors};
use tpulint_analyzer::{
    Applicability, Diagnostic, Edit, LineIndex, Settings, TextRange, apply_fixes, check_tree,
    syntax,
};

use crate::actions;
use crate::document::TextDocument;
use crate::encoding::PositionEncoding;
use crate::lint::minimal_edit;
use crate::project::Resolved;
use crate::session::{Analysis, AnalysisError, CancellationToken, Publish, Session};
use crate::to_proto;

/// The notebook-wide "Fix all" (VS Code's `notebook.codeActionsOnSave` asks for `notebook.*`
/// kinds); `source.fixAll.tpulint` on a cell fixes that cell only.
pub fn notebook_fix_all_kind() -> CodeActionKind {
    CodeActionKind::new("notebook.source.fixAll.tpulint")
}

/// What the server advertises: Python cells of Jupyter notebooks, and Python cells of any other
/// notebook type (VS Code's interactive window, other kernels' notebook types).
pub fn sync_options() -> NotebookDocumentSyncOptions {
    let python_cells = || {
        Some(vec![NotebookCellSelector {
            language: "python".to_string(),
        }])
    };
    NotebookDocumentSyncOptions {
        notebook_selector: vec![
            NotebookSelector::ByNotebook {
                notebook: Notebook::String("jupyter-notebook".to_string()),
                cells: python_cells(),
            },
            NotebookSelector::ByNotebook {
                notebook: Notebook::String("*".to_string()),
                cells: python_cells(),
            },
        ],
        save: Some(true),
    }
}

// ---------------------------------------------------------------------------------------------
// IPython syntax
// ---------------------------------------------------------------------------------------------

/// Cell magics whose body is Python run by the kernel (`%%time` times the cell's code); any
/// other cell magic (`%%bash`, `%%html`, `%%writefile`) makes the cell not Python.
const PYTHON_CELL_MAGICS: [&str; 8] = [
    "time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy",
];

/// A cell's text with IPython-only syntax replaced by whitespace of the same byte length (line
/// breaks kept), and the cell-local byte ranges that were replaced.
pub fn neutralise_ipython(cell: &str) -> (String, Vec<TextRange>) {
    let mut output = cell.to_string();
    let mut neutralised: Vec<TextRange> = Vec::new();
    let lines = line_ranges(cell);
    if let Some(first) = lines.first() {
        let first_line = &cell[first.clone()];
        if let Some(magic) = first_line.strip_prefix("%%") {
            let name = magic.split_whitespace().next().unwrap_or("");
            let whole_cell = !PYTHON_CELL_MAGICS.contains(&name);
            let end = if whole_cell { cell.len() } else { first.end };
            blank(&mut output, 0..end, None);
            neutralised.push(0..end);
            if whole_cell {
                return (output, neutralised);
            }
        }
    }
    let mut lexer = LineLexer::default();
    let mut continues_magic = false;
    // A `%%time` line is already blanked.
    let skip = usize::from(!neutralised.is_empty());
    for line in lines.iter().skip(skip) {
        let text = &cell[line.clone()];
        let starts_statement = lexer.at_statement_start();
        lexer.scan(text);
        let is_magic = continues_magic || (starts_statement && is_ipython_line(text));
        if is_magic {
            let indent = text.len() - text.trim_start().len();
            // Inside a block a blank line would leave the block without a body: a placeholder
            // expression statement (`...` or `0`) keeps it a statement, as IPython's rewrite
            // into a function call does.
            let placeholder = (indent > 0 && !continues_magic).then_some(indent);
            let content_end = line.start + text.trim_end_matches(['\r', '\n']).len();
            blank(&mut output, line.start..content_end, placeholder);
            neutralised.push(line.start..content_end);
            continues_magic = text.trim_end().ends_with('\\');
            lexer.reset_line_state();
        } else {
            continues_magic = false;
        }
    }
    (output, neutralised)
}

/// Byte ranges of the lines of `text`, each including its line break.
fn line_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        if byte == b'\n' {
            ranges.push(start..index + 1);
            start = index + 1;
        }
    }
    if start < text.len() {
        ranges.push(start..text.len());
    }
    ranges
}

/// Replaces every character of `range` except line breaks with spaces (as many as its UTF-8
/// bytes); with `placeholder = Some(indent)`, keeps the indentation and puts an expression
/// statement after it.
fn blank(output: &mut String, range: Range<usize>, placeholder: Option<usize>) {
    let mut replacement: String = output[range.clone()]
        .chars()
        .map(|character| match character {
            '\n' | '\r' => character.to_string(),
            other => " ".repeat(other.len_utf8()),
        })
        .collect();
    if let Some(indent) = placeholder {
        let original = &output[range.clone()];
        let room = range.len() - indent;
        let statement = if room >= 3 { "..." } else { "0" };
        replacement.replace_range(indent..indent + statement.len(), statement);
        replacement.replace_range(..indent, &original[..indent]);
    }
    output.replace_range(range, &replacement);
}

/// Whether a line that starts a statement is IPython syntax: a line magic (`%timeit f()`), a
/// shell escape (`!pip install x`), help (`?obj`, `obj?`, `obj??`), or an assignment from one of
/// these (`files = !ls`). None of these is valid Python.
fn is_ipython_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with(['%', '!', '?']) {
        return true;
    }
    if let Some(subject) = trimmed.strip_suffix('?') {
        let subject = subject.strip_suffix('?').unwrap_or(subject);
        return !subject.is_empty()
            && subject
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    }
    if let Some(equals) = trimmed.find('=') {
        let (targets, rest) = trimmed.split_at(equals);
        let value = rest[1..].trim_start();
        return !targets.trim().is_empty()
            && targets
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ',' || c == ' ')
            && !rest[1..].starts_with('=')
            && value.starts_with(['%', '!']);
    }
    false
}

/// Just enough of Python's lexer to know whether a line starts a new statement: not inside a
/// triple-quoted string, not inside brackets, not after a backslash continuation.
#[derive(Default)]
struct LineLexer {
    /// The quote of the triple-quoted string we are inside.
    triple_quote: Option<char>,
    bracket_depth: usize,
    backslash_continuation: bool,
}

impl LineLexer {
    fn at_statement_start(&self) -> bool {
        self.triple_quote.is_none() && self.bracket_depth == 0 && !self.backslash_continuation
    }

    fn reset_line_state(&mut self) {
        self.bracket_depth = 0;
        self.backslash_continuation = false;
    }

    fn scan(&mut self, line: &str) {
        let characters: Vec<char> = line.chars().collect();
        let mut index = 0;
        self.backslash_continuation = false;
        while index < characters.len() {
            let character = characters[index];
            if let Some(quote) = self.triple_quote {
                if character == '\\' {
                    index += 2;
                    continue;
                }
                if characters[index..].starts_with(&[quote, quote, quote]) {
                    self.triple_quote = None;
                    index += 3;
                    continue;
                }
                index += 1;
                continue;
            }
            match character {
                '#' => break,
                '(' | '[' | '{' => self.bracket_depth += 1,
                ')' | ']' | '}' => self.bracket_depth = self.bracket_depth.saturating_sub(1),
                '\\' if characters[index + 1..]
                    .iter()
                    .all(|c| *c == '\n' || *c == '\r') =>
                {
                    self.backslash_continuation = true;
                }
                '"' | '\'' => {
                    if characters[index..].starts_with(&[character, character, character]) {
                        self.triple_quote = Some(character);
                        index += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote (or the end of the line).
                    index += 1;
                    while index < characters.len() && characters[index] != character {
                        if characters[index] == '\\' {
                            index += 1;
                        }
                        index += 1;
                    }
                }
                _ => {}
            }
            index += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Concatenation and mapping
// ---------------------------------------------------------------------------------------------

/// One cell as the analysis sees it.
#[derive(Clone)]
pub struct CellSnapshot {
    pub uri: Uri,
    /// A Python code cell (markdown and other languages are not checked).
    pub is_python_code: bool,
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    pub version: i32,
}

/// Where a Python code cell sits in the concatenated module.
#[derive(Debug, Clone)]
pub struct CellSpan {
    /// Index into the notebook's cells.
    pub cell: usize,
    pub start: usize,
    /// The cell's own length (a line break added after it is not part of it).
    pub len: usize,
    /// Cell-local ranges of neutralised IPython syntax.
    pub neutralised: Vec<TextRange>,
}

impl CellSpan {
    fn end(&self) -> usize {
        self.start + self.len
    }

    /// The cell-local range of `range`, if it lies inside this cell.
    fn local(&self, range: &TextRange) -> Option<TextRange> {
        (self.start <= range.start && range.end <= self.end())
            .then(|| range.start - self.start..range.end - self.start)
    }

    /// Whether a cell-local edit range touches neutralised IPython syntax.
    fn touches_ipython(&self, local: &TextRange) -> bool {
        self.neutralised.iter().any(|magic| {
            if local.is_empty() {
                magic.start < local.start && local.start < magic.end
            } else {
                magic.start < local.end && local.start < magic.end
            }
        })
    }
}

/// The module a notebook is checked as.
pub struct Concatenation {
    pub text: String,
    pub spans: Vec<CellSpan>,
}

/// The Python code cells of `cells` (given as optional texts: `None` for cells not checked),
/// neutralised and joined, each ending with a line break so the next starts a new line.
pub fn concatenate<'a>(cells: impl IntoIterator<Item = Option<&'a str>>) -> Concatenation {
    let mut text = String::new();
    let mut spans = Vec::new();
    for (cell, source) in cells.into_iter().enumerate() {
        let Some(source) = source else { continue };
        let (neutral, neutralised) = neutralise_ipython(source);
        let start = text.len();
        text.push_str(&neutral);
        if !neutral.is_empty() && !neutral.ends_with('\n') {
            text.push('\n');
        }
        spans.push(CellSpan {
            cell,
            start,
            len: source.len(),
            neutralised,
        });
    }
    Concatenation { text, spans }
}

impl Concatenation {
    /// The span a diagnostic starting at `offset` belongs to: the cell containing it, or the
    /// cell it ends (an offset at a cell's end, or in the line break added after it).
    fn span_at(&self, offset: usize) -> Option<usize> {
        let after = self.spans.partition_point(|span| span.start <= offset);
        let candidate = after.checked_sub(1)?;
        let span = &self.spans[candidate];
        (offset <= span.end() + 1).then_some(candidate)
    }

    /// `diagnostic` in the coordinates of the cell it starts in (range clipped to the cell;
    /// related locations elsewhere dropped; a fix kept only if it stays inside the cell and off
    /// IPython lines). Returns the span index and the mapped diagnostic.
    pub fn map_diagnostic(&self, diagnostic: &Diagnostic) -> Option<(usize, Diagnostic)> {
        let span_index = self.span_at(diagnostic.range.start)?;
        let span = &self.spans[span_index];
        let start = diagnostic.range.start.min(span.end()) - span.start;
        let end = diagnostic
            .range
            .end
            .clamp(diagnostic.range.start, span.end())
            - span.start;
        let start = start.min(end);
        let fix = diagnostic.fix.as_ref().and_then(|fix| {
            let edits = fix
                .edits
                .iter()
                .map(|edit| {
                    let local = span.local(&edit.range)?;
                    (!span.touches_ipython(&local)).then(|| Edit {
                        range: local,
                        content: edit.content.clone(),
                    })
                })
                .collect::<Option<Vec<Edit>>>()?;
            Some(tpulint_analyzer::Fix {
                applicability: fix.applicability,
                title: fix.title.clone(),
                edits,
            })
        });
        let related = diagnostic
            .related
            .iter()
            .filter_map(|related| {
                span.local(&related.range)
                    .map(|range| tpulint_analyzer::Related {
                        range,
                        message: related.message.clone(),
                    })
            })
            .collect();
        Some((
            span_index,
            Diagnostic {
                range: start..end,
                fix,
                related,
                ..diagnostic.clone()
            },
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis
// ---------------------------------------------------------------------------------------------

/// What an analysis of a notebook needs, detached from the lock.
#[derive(Clone)]
pub struct NotebookSnapshot {
    pub uri: Uri,
    pub version: i32,
    pub cells: Vec<CellSnapshot>,
}

impl NotebookSnapshot {
    fn python_sources(&self) -> impl Iterator<Item = Option<&str>> {
        self.cells
            .iter()
            .map(|cell| cell.is_python_code.then_some(&*cell.text))
    }
}

/// The result for one cell.
pub struct CellResult {
    pub uri: Uri,
    pub cell_version: i32,
    /// The cell's diagnostics in its own coordinates, as an [`Analysis`] so that code actions
    /// and hover work on it unchanged; `None` for cells that are not checked.
    pub view: Option<Arc<Analysis>>,
}

/// The result of checking one version of a notebook.
pub struct NotebookAnalysis {
    pub version: i32,
    pub generation: u64,
    pub cells: Vec<CellResult>,
    pub settings: Option<Settings>,
    pub unsafe_fixes: bool,
    pub config_file: Option<std::path::PathBuf>,
    /// The cell texts the analysis saw (Python code cells only), for "Fix all".
    pub sources: Vec<Option<Arc<str>>>,
}

impl NotebookAnalysis {
    pub fn cell(&self, uri: &Uri) -> Option<&CellResult> {
        self.cells.iter().find(|cell| &cell.uri == uri)
    }

    /// Changes when anything about the notebook's diagnostics may have changed.
    pub fn result_id(&self) -> String {
        format!("notebook:{}:{}", self.version, self.generation)
    }

    pub fn cell_diagnostics(&self, uri: &Uri, encoding: PositionEncoding) -> Vec<lsp::Diagnostic> {
        self.cell(uri)
            .and_then(|cell| cell.view.as_ref())
            .map(|view| view.lsp_diagnostics(uri, encoding))
            .unwrap_or_default()
    }

    pub fn diagnostic_count(&self) -> usize {
        self.cells
            .iter()
            .filter_map(|cell| cell.view.as_ref())
            .map(|view| view.diagnostics.len())
            .sum()
    }
}

/// Checks a notebook snapshot as one module. Never panics: a panic in a rule is caught and
/// returned as an error.
pub fn analyze(
    snapshot: NotebookSnapshot,
    resolved: Resolved,
    generation: u64,
    unsafe_fixes: bool,
    token: &CancellationToken,
) -> Result<NotebookAnalysis, AnalysisError> {
    if token.is_cancelled() {
        return Err(AnalysisError::Cancelled);
    }
    let Resolved {
        settings,
        config_file,
        ..
    } = resolved;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let concatenation = concatenate(snapshot.python_sources());
        let diagnostics = match &settings {
            Some(settings) => {
                let tree = syntax::parse(&concatenation.text, None)?;
                if token.is_cancelled() {
                    return None;
                }
                check_tree(&concatenation.text, &tree, settings)
            }
            None => Vec::new(),
        };
        let mut per_span: Vec<Vec<Diagnostic>> = vec![Vec::new(); concatenation.spans.len()];
        for diagnostic in &diagnostics {
            if let Some((span, mapped)) = concatenation.map_diagnostic(diagnostic) {
                per_span[span].push(mapped);
            }
        }
        let mut views: Vec<Option<Arc<Analysis>>> = vec![None; snapshot.cells.len()];
        for (span, cell_diagnostics) in concatenation.spans.iter().zip(per_span) {
            let cell = &snapshot.cells[span.cell];
            // The cell's own tree (of its neutralised text) lets the noqa action find comments.
            let (neutral, _) = neutralise_ipython(&cell.text);
            let tree = syntax::parse(&neutral, None)?;
            views[span.cell] = Some(Arc::new(Analysis {
                version: snapshot.version,
                generation,
                text: cell.text.clone(),
                line_index: cell.line_index.clone(),
                tree,
                diagnostics: cell_diagnostics,
                // "Fix all" of a cell needs the whole notebook; it is built here, not by
                // `actions::fix_all_edit` on the cell alone.
                settings: None,
                unsafe_fixes,
                config_file: config_file.clone(),
            }));
        }
        Some(views)
    }));
    let views = match outcome {
        Ok(Some(views)) => views,
        Ok(None) => return Err(AnalysisError::Cancelled),
        Err(payload) => return Err(AnalysisError::Panicked(panic_text(&*payload))),
    };
    let cells = snapshot
        .cells
        .iter()
        .zip(views)
        .map(|(cell, view)| CellResult {
            uri: cell.uri.clone(),
            cell_version: cell.version,
            view,
        })
        .collect();
    Ok(NotebookAnalysis {
        version: snapshot.version,
        generation,
        cells,
        settings,
        unsafe_fixes,
        config_file,
        sources: snapshot
            .cells
            .iter()
            .map(|cell| cell.is_python_code.then(|| cell.text.clone()))
            .collect(),
    })
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// "Fix all" over a notebook: the engine's fix loop on the concatenated module, where each
/// iteration applies, per cell, the fixes that stay inside their cell (and, with `only_cell`,
/// only in that cell). Stops when nothing applies, at the iteration limit, or before an
/// iteration that would add syntax errors. Returns the new text of each changed cell.
pub fn fix_all_cells(
    sources: &[Option<Arc<str>>],
    settings: &Settings,
    unsafe_fixes: bool,
    only_cell: Option<usize>,
) -> Vec<(usize, String)> {
    let threshold = if unsafe_fixes {
        Applicability::Unsafe
    } else {
        Applicability::Safe
    };
    let mut current: Vec<Option<String>> = sources
        .iter()
        .map(|source| source.as_deref().map(str::to_string))
        .collect();
    let Some(baseline) = syntax::parse(&concatenate(sources_of(&current)).text, None)
        .map(|tree| count_errors(&tree))
    else {
        return Vec::new();
    };
    for _ in 0..MAX_FIX_ITERATIONS {
        let concatenation = concatenate(sources_of(&current));
        let Some(tree) = syntax::parse(&concatenation.text, None) else {
            break;
        };
        let diagnostics = check_tree(&concatenation.text, &tree, settings);
        let mut per_span: Vec<Vec<Diagnostic>> = vec![Vec::new(); concatenation.spans.len()];
        for diagnostic in &diagnostics {
            if let Some((span, mapped)) = concatenation.map_diagnostic(diagnostic)
                && mapped.fix.is_some()
                && only_cell.is_none_or(|cell| concatenation.spans[span].cell == cell)
            {
                per_span[span].push(mapped);
            }
        }
        let mut next = current.clone();
        let mut changed = false;
        for (span, cell_diagnostics) in concatenation.spans.iter().zip(per_span) {
            let Some(text) = current[span.cell].as_deref() else {
                continue;
            };
            if let Some((output, _)) = apply_fixes(text, &cell_diagnostics, threshold) {
                next[span.cell] = Some(output);
                changed = true;
            }
        }
        if !changed {
            break;
        }
        // Like the engine's loop: an iteration that adds syntax errors is discarded.
        let candidate = concatenate(sources_of(&next));
        match syntax::parse(&candidate.text, None) {
            Some(tree) if count_errors(&tree) <= baseline => current = next,
            _ => break,
        }
    }
    current
        .into_iter()
        .zip(sources)
        .enumerate()
        .filter_map(|(cell, (new, old))| {
            let (new, old) = (new?, old.as_deref()?);
            (new != old).then_some((cell, new))
        })
        .collect()
}

fn sources_of(cells: &[Option<String>]) -> impl Iterator<Item = Option<&str>> {
    cells.iter().map(Option::as_deref)
}

/// "Fix all" as a workspace edit over the cells' URIs; `None` when nothing changes.
pub fn fix_all_edit(
    analysis: &NotebookAnalysis,
    only_cell: Option<usize>,
    encoding: PositionEncoding,
) -> Option<WorkspaceEdit> {
    let settings = analysis.settings.as_ref()?;
    let fixed = fix_all_cells(
        &analysis.sources,
        settings,
        analysis.unsafe_fixes,
        only_cell,
    );
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for (cell, new_text) in fixed {
        let Some(old) = analysis.sources[cell].as_deref() else {
            continue;
        };
        let Some(edit) = minimal_edit(old, &new_text) else {
            continue;
        };
        let index = LineIndex::new(old);
        changes.insert(
            analysis.cells[cell].uri.clone(),
            vec![to_proto::text_edit(old, &index, &edit, encoding)],
        );
    }
    (!changes.is_empty()).then(|| WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    })
}

/// Whether some diagnostic (of `cell`, or of any cell) has a fix "Fix all" would apply.
fn has_fix_all_candidates(analysis: &NotebookAnalysis, cell: Option<usize>) -> bool {
    analysis
        .cells
        .iter()
        .enumerate()
        .filter(|(index, _)| cell.is_none_or(|cell| cell == *index))
        .filter_map(|(_, cell)| cell.view.as_ref())
        .flat_map(|view| &view.diagnostics)
        .filter_map(|diagnostic| diagnostic.fix.as_ref())
        .any(|fix| match fix.applicability {
            Applicability::Safe => true,
            Applicability::Unsafe => analysis.unsafe_fixes,
            Applicability::DisplayOnly => false,
        })
}

/// Code actions on a cell: the quick fixes and noqa actions of its diagnostics, "Fix all" for
/// the cell (`source.fixAll.tpulint`) and, when asked for by kind, for the whole notebook.
/// Edits are computed eagerly (not resolved lazily): the cell's fix-all needs the notebook.
pub fn code_actions(
    analysis: &NotebookAnalysis,
    cell_uri: &Uri,
    range: TextRange,
    only: Option<&[CodeActionKind]>,
    encoding: PositionEncoding,
) -> Vec<CodeActionOrCommand> {
    let Some(cell_index) = analysis.cells.iter().position(|cell| &cell.uri == cell_uri) else {
        return Vec::new();
    };
    let mut result = Vec::new();
    if let Some(view) = &analysis.cells[cell_index].view
        && actions::requested(only, &CodeActionKind::QUICKFIX)
    {
        result.extend(actions::code_actions(
            cell_uri,
            view,
            range,
            Some(&[CodeActionKind::QUICKFIX]),
            encoding,
            false,
        ));
    }
    let cell_fix_all = actions::source_fix_all_tpulint();
    if actions::requested(only, &cell_fix_all) && has_fix_all_candidates(analysis, Some(cell_index))
    {
        result.push(CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: actions::FIX_ALL_TITLE.to_string(),
            kind: Some(cell_fix_all),
            edit: Some(fix_all_edit(analysis, Some(cell_index), encoding).unwrap_or_default()),
            ..lsp::CodeAction::default()
        }));
    }
    // Only on request: it is what `notebook.codeActionsOnSave` asks for, and offering it in
    // every cell's light bulb would repeat the cell's own "Fix all".
    let notebook_fix_all = notebook_fix_all_kind();
    if only.is_some()
        && actions::requested(only, &notebook_fix_all)
        && has_fix_all_candidates(analysis, None)
    {
        result.push(CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: "Fix all tpulint issues in the notebook".to_string(),
            kind: Some(notebook_fix_all),
            edit: Some(fix_all_edit(analysis, None, encoding).unwrap_or_default()),
            ..lsp::CodeAction::default()
        }));
    }
    result
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

struct CellDocument {
    document: TextDocument,
    language_id: String,
}

/// One open notebook.
pub struct NotebookEntry {
    version: i32,
    /// Cell URIs and kinds, in notebook order.
    cells: Vec<(Uri, NotebookCellKind)>,
    /// The text of each cell, by cell URI.
    texts: HashMap<Uri, CellDocument>,
    analysis: Option<Arc<NotebookAnalysis>>,
    /// The worker's previous result: what a pull client was last told about (it re-pulls the
    /// cells it changed). Results computed for requests do not move it, or a pull of the edited
    /// cell would hide that another cell's findings changed.
    worker_baseline: Option<Arc<NotebookAnalysis>>,
    worker_running: bool,
    dirty: bool,
}

impl NotebookEntry {
    fn snapshot(&self, uri: &Uri) -> NotebookSnapshot {
        let cells = self
            .cells
            .iter()
            .map(|(cell_uri, kind)| {
                let text = self.texts.get(cell_uri);
                CellSnapshot {
                    uri: cell_uri.clone(),
                    is_python_code: *kind == NotebookCellKind::CODE
                        && text.is_some_and(|text| text.language_id == "python"),
                    text: text.map_or_else(|| Arc::from(""), |text| text.document.text().clone()),
                    line_index: text.map_or_else(
                        || Arc::new(LineIndex::new("")),
                        |text| text.document.line_index().clone(),
                    ),
                    version: text.map_or(0, |text| text.document.version()),
                }
            })
            .collect();
        NotebookSnapshot {
            uri: uri.clone(),
            version: self.version,
            cells,
        }
    }
}

#[derive(Default)]
struct State {
    notebooks: HashMap<Uri, NotebookEntry>,
    /// Cell URI → notebook URI.
    owners: HashMap<Uri, Uri>,
}

/// The open notebooks. Kept apart from the session's text documents: cells are not text
/// documents of their own for the protocol (they arrive inside notebook notifications).
#[derive(Default)]
pub struct Notebooks {
    state: Mutex<State>,
}

impl Notebooks {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock is recovered: every mutation under it leaves the maps consistent.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The notebook a cell belongs to.
    pub fn owner(&self, cell: &Uri) -> Option<Uri> {
        self.lock().owners.get(cell).cloned()
    }

    pub fn uris(&self) -> Vec<Uri> {
        self.lock().notebooks.keys().cloned().collect()
    }

    /// Lines for the debug report.
    pub fn describe(&self) -> String {
        let state = self.lock();
        let mut uris: Vec<_> = state.notebooks.iter().collect();
        uris.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        let mut out = format!("open notebooks: {}\n", uris.len());
        for (uri, entry) in uris {
            out.push_str(&format!(
                "  {} (version {}, {} cells, {} diagnostics)\n",
                uri.as_str(),
                entry.version,
                entry.cells.len(),
                entry
                    .analysis
                    .as_ref()
                    .map_or(0, |analysis| analysis.diagnostic_count())
            ));
        }
        out
    }

    /// `notebookDocument/didOpen`.
    pub fn open(&self, params: DidOpenNotebookDocumentParams) -> Uri {
        let notebook = params.notebook_document;
        let mut state = self.lock();
        let texts = params
            .cell_text_documents
            .into_iter()
            .map(|item| (item.uri.clone(), cell_document(item)))
            .collect();
        let cells: Vec<(Uri, NotebookCellKind)> = notebook
            .cells
            .into_iter()
            .map(|cell| (cell.document, cell.kind))
            .collect();
        for (cell, _) in &cells {
            state.owners.insert(cell.clone(), notebook.uri.clone());
        }
        state.notebooks.insert(
            notebook.uri.clone(),
            NotebookEntry {
                version: notebook.version,
                cells,
                texts,
                analysis: None,
                worker_baseline: None,
                worker_running: false,
                dirty: false,
            },
        );
        notebook.uri
    }

    /// `notebookDocument/didChange`: metadata, cell structure (a splice of the cell array with
    /// the opened and closed cell documents), cell data, and incremental text changes, applied
    /// in that order. Returns the cell URIs that left the notebook (to be cleared), or `None` if
    /// the notebook is not open.
    pub fn change(
        &self,
        params: DidChangeNotebookDocumentParams,
        encoding: PositionEncoding,
    ) -> Option<Vec<Uri>> {
        let uri = params.notebook_document.uri;
        let mut state = self.lock();
        let State { notebooks, owners } = &mut *state;
        let entry = notebooks.get_mut(&uri)?;
        entry.version = params.notebook_document.version;
        // Notebook metadata (kernel, language info) does not change what is checked: the cells'
        // kinds and languages decide. Only the version moves.
        let change = params.change;
        let mut removed = Vec::new();
        if let Some(cells) = change.cells {
            if let Some(structure) = cells.structure {
                let array = structure.array;
                let start = (array.start as usize).min(entry.cells.len());
                let end = (start + array.delete_count as usize).min(entry.cells.len());
                let inserted: Vec<(Uri, NotebookCellKind)> = array
                    .cells
                    .unwrap_or_default()
                    .into_iter()
                    .map(|cell| (cell.document, cell.kind))
                    .collect();
                let deleted: Vec<(Uri, NotebookCellKind)> =
                    entry.cells.splice(start..end, inserted).collect();
                for item in structure.did_open.unwrap_or_default() {
                    entry.texts.insert(item.uri.clone(), cell_document(item));
                }
                // A cell's document lives until the client closes it, not until the cell leaves
                // the array: a move may arrive as a deletion and a later insertion.
                let present: HashSet<&Uri> = entry.cells.iter().map(|(cell, _)| cell).collect();
                for closed in structure.did_close.unwrap_or_default() {
                    entry.texts.remove(&closed.uri);
                    if !present.contains(&closed.uri) {
                        owners.remove(&closed.uri);
                    }
                }
                for (cell, _) in deleted {
                    if !present.contains(&cell) {
                        removed.push(cell);
                    }
                }
                for (cell, _) in &entry.cells {
                    owners.insert(cell.clone(), uri.clone());
                }
            }
            for data in cells.data.unwrap_or_default() {
                if let Some(cell) = entry
                    .cells
                    .iter_mut()
                    .find(|(cell, _)| *cell == data.document)
                {
                    cell.1 = data.kind;
                }
            }
            for content in cells.text_content.unwrap_or_default() {
                if let Some(cell) = entry.texts.get_mut(&content.document.uri) {
                    cell.document.apply_changes(
                        content.changes,
                        content.document.version,
                        encoding,
                    );
                }
            }
        }
        Some(removed)
    }

    /// `notebookDocument/didClose`: forgets the notebook; returns its cells (to be cleared).
    pub fn close(&self, params: DidCloseNotebookDocumentParams) -> Vec<Uri> {
        let mut state = self.lock();
        let Some(entry) = state.notebooks.remove(&params.notebook_document.uri) else {
            return Vec::new();
        };
        let mut cells: Vec<Uri> = entry.cells.into_iter().map(|(cell, _)| cell).collect();
        let detached = entry.texts.into_keys();
        for closed in params
            .cell_text_documents
            .into_iter()
            .map(|document| document.uri)
            .chain(detached)
        {
            if !cells.contains(&closed) {
                cells.push(closed);
            }
        }
        for cell in &cells {
            state.owners.remove(cell);
        }
        cells
    }

    fn snapshot(&self, notebook: &Uri) -> Option<NotebookSnapshot> {
        self.lock()
            .notebooks
            .get(notebook)
            .map(|entry| entry.snapshot(notebook))
    }

    fn current_analysis(&self, notebook: &Uri, generation: u64) -> Option<Arc<NotebookAnalysis>> {
        let state = self.lock();
        let entry = state.notebooks.get(notebook)?;
        entry.analysis.clone().filter(|analysis| {
            analysis.version == entry.version && analysis.generation == generation
        })
    }

    /// Stores `analysis` if the notebook is still at its version and the settings at its
    /// generation; if so and `publish` is set, queues a publish for every cell under the lock.
    /// With `from_worker`, it becomes the worker's baseline and the previous baseline is
    /// returned; `None` when the analysis was stale.
    fn store(
        &self,
        session: &Session,
        notebook: &Uri,
        analysis: &Arc<NotebookAnalysis>,
        publish: bool,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        let generation = session.config().generation;
        let encoding = session.encoding();
        let mut state = self.lock();
        let entry = state.notebooks.get_mut(notebook)?;
        if entry.version != analysis.version || generation != analysis.generation {
            return None;
        }
        entry.analysis = Some(analysis.clone());
        let previous = if from_worker {
            entry.worker_baseline.replace(analysis.clone())
        } else {
            None
        };
        if publish {
            for cell in &analysis.cells {
                session.queue_publish(Publish {
                    uri: cell.uri.clone(),
                    diagnostics: analysis.cell_diagnostics(&cell.uri, encoding),
                    version: Some(cell.cell_version),
                });
            }
        }
        Some(previous)
    }
}

fn cell_document(item: TextDocumentItem) -> CellDocument {
    CellDocument {
        document: TextDocument::new(item.text, item.version),
        language_id: item.language_id,
    }
}

// ---------------------------------------------------------------------------------------------
// Scheduling and requests
// ---------------------------------------------------------------------------------------------

fn prepare(
    session: &Session,
    notebooks: &Notebooks,
    notebook: &Uri,
) -> Option<(NotebookSnapshot, Resolved, u64, bool)> {
    let config = session.config();
    let snapshot = notebooks.snapshot(notebook)?;
    // The notebook's own path decides its project configuration; resolving may read files,
    // so it happens outside the lock.
    let resolved = config.projects.resolve(notebook, "python");
    if let Some(error) = &resolved.error {
        session.show_once(
            MessageType::ERROR,
            format!("tpulint: invalid configuration: {error}"),
        );
    }
    Some((
        snapshot,
        resolved,
        config.generation,
        config.client.unsafe_fixes,
    ))
}

/// The current analysis of `notebook`, computed off the message loop when the stored one is
/// stale.
pub async fn analysis_for(
    session: &Arc<Session>,
    notebooks: &Arc<Notebooks>,
    notebook: &Uri,
    token: &CancellationToken,
) -> Result<Arc<NotebookAnalysis>, AnalysisError> {
    if let Some(analysis) = notebooks.current_analysis(notebook, session.config().generation) {
        return Ok(analysis);
    }
    let (snapshot, resolved, generation, unsafe_fixes) =
        prepare(session, notebooks, notebook).ok_or(AnalysisError::Closed)?;
    let token = token.clone();
    let analysis = tokio::task::spawn_blocking(move || {
        analyze(snapshot, resolved, generation, unsafe_fixes, &token)
    })
    .await
    .map_err(|error| AnalysisError::Panicked(error.to_string()))??;
    let analysis = Arc::new(analysis);
    notebooks.store(session, notebook, &analysis, false, false);
    Ok(analysis)
}

/// Queues an analysis of `notebook`: one worker per notebook, re-running while changes keep
/// arriving. In push mode the worker publishes every cell; in pull mode it stores the result and
/// asks the client to pull again when a cell whose text did not change got other diagnostics
/// (an import added in one cell changes the findings of another).
pub fn schedule(session: &Arc<Session>, notebooks: &Arc<Notebooks>, client: &Client, uri: &Uri) {
    let negotiated = session.negotiated();
    if negotiated.pull_diagnostics && !negotiated.workspace_diagnostic_refresh {
        // Nothing to publish and no refresh to send: pulls analyse on demand.
        return;
    }
    {
        let mut state = notebooks.lock();
        let Some(entry) = state.notebooks.get_mut(uri) else {
            return;
        };
        entry.dirty = true;
        if entry.worker_running {
            return;
        }
        entry.worker_running = true;
    }
    let session = session.clone();
    let notebooks = notebooks.clone();
    let client = client.clone();
    let uri = uri.clone();
    tokio::spawn(async move { worker(session, notebooks, client, uri).await });
}

/// Clears the diagnostics of cells that left a notebook (push mode only: a pull client drops
/// what it pulled for a closed document itself).
pub fn clear_cells(session: &Session, cells: Vec<Uri>) {
    if session.negotiated().pull_diagnostics {
        return;
    }
    for uri in cells {
        session.queue_publish(Publish {
            uri,
            diagnostics: Vec::new(),
            version: None,
        });
    }
}

async fn worker(session: Arc<Session>, notebooks: Arc<Notebooks>, client: Client, uri: Uri) {
    loop {
        match notebooks.lock().notebooks.get_mut(&uri) {
            Some(entry) => entry.dirty = false,
            None => return,
        }
        let Some((snapshot, resolved, generation, unsafe_fixes)) =
            prepare(&session, &notebooks, &uri)
        else {
            return;
        };
        let version = snapshot.version;
        let token = CancellationToken::default();
        let outcome = tokio::task::spawn_blocking(move || {
            analyze(snapshot, resolved, generation, unsafe_fixes, &token)
        })
        .await;
        let negotiated = session.negotiated();
        match outcome {
            Ok(Ok(analysis)) => {
                let analysis = Arc::new(analysis);
                let stored = notebooks.store(
                    &session,
                    &uri,
                    &analysis,
                    !negotiated.pull_diagnostics,
                    true,
                );
                if negotiated.pull_diagnostics
                    && negotiated.workspace_diagnostic_refresh
                    && let Some(Some(previous)) = stored
                    && other_cells_changed(&previous, &analysis, negotiated.encoding)
                {
                    // A client that refuses still pulls on its next edit.
                    let _ = client.workspace_diagnostic_refresh().await;
                }
            }
            Ok(Err(AnalysisError::Panicked(message))) => {
                client
                    .log_message(
                        MessageType::ERROR,
                        format!(
                            "tpulint crashed while checking {} (version {version}): {message}",
                            uri.as_str()
                        ),
                    )
                    .await;
            }
            Ok(Err(AnalysisError::Cancelled | AnalysisError::Closed)) => {}
            Err(join_error) => {
                client
                    .log_message(
                        MessageType::ERROR,
                        format!("tpulint analysis task failed: {join_error}"),
                    )
                    .await;
            }
        }
        let mut state = notebooks.lock();
        match state.notebooks.get_mut(&uri) {
            Some(entry) if entry.dirty => continue,
            Some(entry) => {
                entry.worker_running = false;
                return;
            }
            None => return,
        }
    }
}

/// Whether a cell whose text is unchanged between two analyses got different diagnostics.
fn other_cells_changed(
    previous: &NotebookAnalysis,
    next: &NotebookAnalysis,
    encoding: PositionEncoding,
) -> bool {
    next.cells.iter().any(|cell| {
        previous.cell(&cell.uri).is_some_and(|old| {
            old.cell_version == cell.cell_version
                && previous.cell_diagnostics(&cell.uri, encoding)
                    != next.cell_diagnostics(&cell.uri, encoding)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics_become_whitespace_of_the_same_length() {
        let cell =
            "%matplotlib inline\n!pip install x\nfiles = !ls -la\nimport torch\ntorch.ones?\n";
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(neutral.len(), cell.len());
        assert_eq!(
            neutral,
            "                  \n              \n               \nimport torch\n           \n"
        );
        assert_eq!(ranges.len(), 4);
    }

    #[test]
    fn strings_brackets_and_operators_are_left_alone() {
        let cell = "x = (a\n% b)\ndoc = \"\"\"\n%not a magic\n\"\"\"\ny = a != b\ns = '%s' % x\n";
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(neutral, cell);
        assert!(ranges.is_empty());
    }

    #[test]
    fn a_magic_inside_a_block_keeps_the_block_valid() {
        let cell = "for i in range(3):\n    %time f(i)\n";
        let (neutral, _) = neutralise_ipython(cell);
        assert_eq!(neutral, "for i in range(3):\n    ...       \n");
        let tree = syntax::parse(&neutral, None).expect("parses");
        assert_eq!(count_errors(&tree), 0);
    }

    #[test]
    fn cell_magics_blank_the_cell_unless_its_body_is_python() {
        let (neutral, _) = neutralise_ipython("%%bash\necho hi\n");
        assert_eq!(neutral.trim(), "");
        let (neutral, _) = neutralise_ipython("%%time\nx = 1\n");
        assert_eq!(neutral, "      \nx = 1\n");
    }

    #[test]
    fn a_continued_shell_line_is_blanked_whole() {
        let (neutral, _) = neutralise_ipython("!pip install \\\n   torch\nx = 1\n");
        assert_eq!(neutral, "              \n        \nx = 1\n");
    }

    #[test]
    fn diagnostics_map_to_their_cell_and_are_clipped() {
        let concatenation = concatenate([Some("import torch\n"), None, Some("x = 1")]);
        assert_eq!(concatenation.text, "import torch\nx = 1\n");
        let diagnostic = Diagnostic {
            code: "TPU000",
            name: "test",
            message: String::new(),
            range: 7..16,
            severity: tpulint_analyzer::Severity::Warning,
            fix: Some(tpulint_analyzer::Fix::safe(
                "cross",
                vec![Edit::replace(7..16, "x")],
            )),
            related: vec![tpulint_analyzer::Related {
                range: 13..14,
                message: String::new(),
            }],
            tag: None,
        };
        let (span, mapped) = concatenation.map_diagnostic(&diagnostic).expect("mapped");
        assert_eq!(concatenation.spans[span].cell, 0);
        assert_eq!(mapped.range, 7..13);
        assert!(mapped.fix.is_none(), "a fix crossing cells is dropped");
        assert!(mapped.related.is_empty());
        let inside = Diagnostic {
            range: 13..14,
            fix: Some(tpulint_analyzer::Fix::safe(
                "local",
                vec![Edit::replace(17..18, "2")],
            )),
            related: Vec::new(),
            ..diagnostic
        };
        let (span, mapped) = concatenation.map_diagnostic(&inside).expect("mapped");
        assert_eq!(concatenation.spans[span].cell, 2);
        assert_eq!(mapped.range, 0..1);
        assert_eq!(mapped.fix.expect("kept").edits[0].range, 4..5);
    }
}

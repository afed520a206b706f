//! One checked file's text with its line index, and 1-based row/column locations as ruff reports them.

use tpulint_analyzer::{Diagnostic, LineIndex};

/// A checked file: its display name, text and diagnostics.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as the user gave it (or `-` / `--stdin-filename` for stdin).
    pub name: String,
    /// The absolute path, for formats that want one (ruff's JSON does); `None` for stdin.
    pub absolute_path: Option<String>,
    pub text: String,
    pub index: LineIndex,
    pub diagnostics: Vec<Diagnostic>,
    /// For a notebook (checked as one module of its code cells): the first line of each
    /// checked cell in `text` and the cell's 1-based number over all cells, in order. Rows are
    /// then reported inside the cell.
    pub cells: Vec<(usize, usize)>,
}

impl SourceFile {
    pub fn new(
        name: impl Into<String>,
        text: impl Into<String>,
        diagnostics: Vec<Diagnostic>,
    ) -> Self {
        let text = text.into();
        let index = LineIndex::new(&text);
        SourceFile {
            name: name.into(),
            absolute_path: None,
            text,
            index,
            diagnostics,
            cells: Vec::new(),
        }
    }

    /// Marks the file as a notebook: `cell_starts` holds each checked cell's start offset in
    /// `text` and its 1-based number over all cells (`tpulint_ide::Module::cell_starts`).
    pub fn with_cells(mut self, cell_starts: &[(usize, usize)]) -> Self {
        self.cells = cell_starts
            .iter()
            .map(|&(offset, number)| (self.index.line_of(offset), number))
            .collect();
        self
    }

    /// `name:row:col`, or `name:cell N:row:col` in a notebook.
    pub fn display_location(&self, location: &Location) -> String {
        match location.cell {
            Some(cell) => format!(
                "{}:cell {cell}:{}:{}",
                self.name, location.row, location.column
            ),
            None => format!("{}:{}:{}", self.name, location.row, location.column),
        }
    }

    /// Sets the absolute path reported by the machine-readable formats.
    pub fn with_absolute_path(mut self, path: impl Into<String>) -> Self {
        self.absolute_path = Some(path.into());
        self
    }

    /// The absolute path when known, else the display name.
    pub fn full_path(&self) -> &str {
        self.absolute_path.as_deref().unwrap_or(&self.name)
    }

    /// 1-based row (inside its cell, in a notebook) and 1-based column counted in characters
    /// (ruff's convention).
    pub fn location(&self, offset: usize) -> Location {
        let (line, byte_column) = self.index.line_col(offset);
        let line_start = self.index.line_start(line);
        let end = (line_start + byte_column).min(self.text.len());
        let column = self
            .text
            .get(line_start..end)
            .map_or(byte_column, |prefix| prefix.chars().count());
        let cell = self
            .cells
            .partition_point(|&(first_line, _)| first_line <= line)
            .checked_sub(1)
            .map(|index| self.cells[index]);
        Location {
            row: line + 1 - cell.map_or(0, |(first_line, _)| first_line),
            column: column + 1,
            cell: cell.map(|(_, number)| number),
            module_row: line + 1,
        }
    }

    /// The text of 0-based `line` without its terminator.
    pub fn line_text(&self, line: usize) -> &str {
        let range = self.index.line_range(line, &self.text);
        self.text.get(range).unwrap_or("")
    }
}

/// A 1-based row and column, and in a notebook the 1-based cell the row counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub row: usize,
    pub column: usize,
    pub cell: Option<usize>,
    /// The row in the whole checked text (equal to `row` outside notebooks), for excerpts.
    pub module_row: usize,
}

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
    /// For a notebook: the file on disk (its JSON) and where the module is written in it (see
    /// [`SourceFile::with_file_text`]), so CI formats can point at the `.ipynb` line.
    file: Option<FileText>,
}

/// The text of the file on disk when it is not the checked text (a notebook's JSON).
#[derive(Debug, Clone)]
struct FileText {
    text: String,
    index: LineIndex,
    /// Sorted `(checked-text offset, file offset)` pairs; bytes between two are written one
    /// for one.
    offsets: Vec<(usize, usize)>,
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
            file: None,
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

    /// Gives the text of the file on disk (a notebook's JSON) and where the checked text is
    /// written in it: sorted `(checked offset, file offset)` pairs
    /// (`tpulint_ide::Notebook::file_offsets`). Locations then carry `file_row`/`file_column`.
    pub fn with_file_text(mut self, text: impl Into<String>, offsets: Vec<(usize, usize)>) -> Self {
        let text = text.into();
        let index = LineIndex::new(&text);
        self.file = Some(FileText {
            text,
            index,
            offsets,
        });
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
        let (file_row, file_column) = self
            .file
            .as_ref()
            .and_then(|file| file.row_column(offset))
            // A notebook whose JSON layout is unknown: its first line, clearly a fallback.
            .unwrap_or(if self.cells.is_empty() {
                (line + 1, column + 1)
            } else {
                (1, 1)
            });
        Location {
            row: line + 1 - cell.map_or(0, |(first_line, _)| first_line),
            column: column + 1,
            cell: cell.map(|(_, number)| number),
            module_row: line + 1,
            file_row,
            file_column,
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
    /// The 1-based row and column in the file on disk: in a notebook, where the JSON string
    /// holding the character is (equal to `row`/`column` outside notebooks).
    pub file_row: usize,
    pub file_column: usize,
}

impl FileText {
    /// The 1-based row and column (in characters) in the file of checked-text `offset`.
    fn row_column(&self, offset: usize) -> Option<(usize, usize)> {
        let pair = self
            .offsets
            .partition_point(|&(checked, _)| checked <= offset)
            .checked_sub(1)?;
        let (checked, written) = self.offsets[pair];
        let mut at = (written + (offset - checked)).min(self.text.len());
        // A run written one for one never passes the next pair's start.
        if let Some(&(_, next)) = self.offsets.get(pair + 1) {
            at = at.min(next.max(written));
        }
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let (line, _) = self.index.line_col(at);
        let line_start = self.index.line_start(line);
        let column = self.text[line_start..at].chars().count();
        Some((line + 1, column + 1))
    }
}
